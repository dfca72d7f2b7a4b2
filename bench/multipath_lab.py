# SPDX-License-Identifier: GPL-2.0-only
"""The multipath lab the matrix and the stall count share: a private
mpnvme-lab topology with mpnvme-target serving every path, and fio's
cells on it (throughput, flows, subflows, CPU and the kernel's counters)."""
import json

import common
import conditions
import fio_logs
import loss_model
import published
import samplers

JOBS = 4  # numjobs of the selftest's workload: each job has its own I/O queue (connection) on each path
NQN = "nqn.2026-11.io.mpnvme:matrix"
TLS_HOST = "nqn.2026-12.io.mpnvme:bench-tls"


class MatrixLab:
    """A private mpnvme-lab topology with mpnvme-target serving every path."""

    def __init__(self, name, rates, work, loss=0.0, delay_ms=0, iodepth=256, cc=conditions.DEFAULT_CC,
                 endpoints=conditions.ENDPOINTS, tls_key=None, loss_unit="segment"):
        self.name, self.rates, self.work, self.iodepth = name, rates, work, iodepth
        # tls_key: every port requires TLS 1.3 and fio's host brings this PSK.
        target_tls = ["--tls", "--tls-key", f"{TLS_HOST}=@{tls_key}"] if tls_key else []
        self.fio_extra = ["--tls=1", f"--tls_key_file={tls_key}", f"--hostnqn={TLS_HOST}"] if tls_key else []
        self.paths = len(rates)
        self.context = conditions.cell_context(cc, rates, loss, delay_ms, endpoints, loss_unit=loss_unit)
        args = ["up", "--paths", str(self.paths), "--rate", ",".join(f"{r}mbit" for r in rates), "--cc", cc,
                "--endpoints", endpoints, "--loss-unit", loss_unit]
        if delay_ms:
            args += ["--delay", str(delay_ms)]
        self.lab(*args)
        self.context |= conditions.lab_conditions(name, cc, endpoints)
        for p in range(1, self.paths + 1):
            if loss:
                self.lab("loss", str(p), str(loss))
        self.target = common.start_lab_target(name, common.TARGET, self.paths, NQN, "ram:2g", work / f"target-{name}.log",
                                              target_tls)
        self.sink = common.start_control_sink(name, self.paths, work / f"sink-{name}.log")

    def lab(self, *args):
        return common.lab(self.name, *args)

    def line_mib_s(self):
        return published.mbit_to_mib_s(sum(self.rates))

    def wire_bytes(self, rw):
        """Bytes the host side of each path received (reads) or sent (writes)."""
        key = "rx_bytes" if rw == "randread" else "tx_bytes"
        return [p[key] for p in json.loads(self.lab("counters", "--json"))["paths"]]

    def fio(self, tag, transport, iopolicy, rw, runtime, ramp, paths=None, extra=()):
        """One fio run of the selftest's workload in the host namespace; returns
        steady (MiB/s from the bandwidth log), fio_cpu and target_cpu
        (seconds over fio's window), bytes, wire (MiB/s the paths carried in
        that window), fio_mib_s (fio's own figure), path_bytes (per path,
        the whole run), subflows (per connection) and stalls (on the wire:
        [(start, seconds)] in the ramp and in the window)."""
        out, bwlog, stats = self.work / f"{tag}.json", self.work / f"{tag}-bw", self.work / f"{tag}-paths.jsonl"
        cmd = [*common.lab_fio(self.name), f"--write_bw_log={bwlog}", f"--log_avg_msec={fio_logs.STEADY_LOG_MS}", "--name=seed", f"--ioengine=external:{common.ENGINE}", f"--traddr={common.lab_paths(paths or self.paths)}",
               f"--subnqn={NQN}", f"--transport={transport}", f"--iopolicy={iopolicy}", f"--rw={rw}", "--bs=128k",
               f"--numjobs={JOBS}", f"--iodepth={self.iodepth}", "--thread=1", "--group_reporting=1", "--time_based=1",
               f"--runtime={runtime}", f"--ramp_time={ramp}", "--size=2g", "--output-format=json",
               f"--output={out}", f"--path_stats={stats}", *self.fio_extra, *extra]
        sampler = samplers.CpuSampler(self.target.pid)
        wire_sampler = samplers.WireSampler(self.name, self.paths, rw == "randread")
        flows, loss_before = samplers.FlowSampler(self.name, self.paths, 4420), loss_model.lab_loss(self.name)
        common.run_fio(cmd, tag, cwd=self.work)
        sampler.stop()
        wire_sampler.stop()
        flows = flows.stop()
        loss = loss_model.loss_delta(loss_before, loss_model.lab_loss(self.name), rw == "randread")
        result = fio_logs.fio_json(out)
        job = result["jobs"][0]
        ddir = "read" if rw == "randread" else "write"
        d = job[ddir]
        # The target's CPU over the window fio counted its bytes in (the
        # drain after the time is up included: so are its bytes); the wire
        # over the window of the bandwidth log the cell's rate comes from.
        target_cpu = sampler.between(*fio_logs.fio_window(result, ddir))
        logs = sorted(self.work.glob(f"{tag}-bw_bw.*.log"))
        window = fio_logs.log_window(result, ddir, logs)
        wire = wire_sampler.mib_s(*window)
        # Stalls on the wire: in the ramp (once I/O first ran at a quarter
        # of the line: set-up before it is not a stall), and in the window,
        # where they lower the cell.
        first = wire_sampler.first_flow(self.line_mib_s()) or window[0]
        stalls = {"ramp": wire_sampler.holes(first, window[0], self.line_mib_s()),
                  "window": wire_sampler.holes(*window, self.line_mib_s())}
        fio_cpu = (job["usr_cpu"] + job["sys_cpu"]) / 100 * d["runtime"] / 1000
        steady = fio_logs.steady_mib_s(logs)
        return {"steady": steady, "fio_cpu": fio_cpu, "target_cpu": target_cpu, "bytes": d["io_bytes"], "wire": wire,
                "fio_mib_s": d["bw_bytes"] / 1048576, "path_bytes": wire_sampler.path_bytes(), "subflows": samplers.path_subflows(stats),
                "stalls": stalls, "flows": flows, "loss": loss}

    def control(self, transport, rw, runtime, ramp, paths=None):
        """The raw control beside an engine run (mpnvme-floor stream): as many
        connections on each path as the engine has there, one per job; with
        its flows and what the loss did to it."""
        flows, loss_before = samplers.FlowSampler(self.name, self.paths, common.CONTROL_PORT), loss_model.lab_loss(self.name)
        out = common.control_stream(self.name, paths or self.paths, transport, rw == "randread", ramp, runtime, per_path=JOBS)
        return out | {"flows": flows.stop(), "loss": loss_model.loss_delta(loss_before, loss_model.lab_loss(self.name), rw == "randread")}

    def close(self):
        common.stop(self.target)
        common.stop(self.sink)
        common.lab_down(self.name)
