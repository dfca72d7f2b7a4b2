# SPDX-License-Identifier: GPL-2.0-only
"""The conditions a bench cell runs under, said with the cell: the
congestion control (cubic, as the published runs), the MPTCP endpoints,
the loss model and delay, and what the lab's namespaces really run."""
import os

from common import die, lab


# Like with like: the published runs used Linux's default congestion
# control, cubic; this machine's default may be another (bbr, which does not
# back off on loss). Every shaped experiment runs under cubic; bench/run
# --cc ALG adds ALG as extra cells, never in place of cubic.
DEFAULT_CC = "cubic"


# The upstream selftest's MPTCP endpoints (mpnvme-lab --endpoints all).
ENDPOINTS = "all"


def condition_text(loss_pct, delay_ms, loss_unit="segment", loss_via="nft"):
    """What a cell's paths did, said in the cell itself: the loss model too
    (per wire segment or per GSO packet, dropped on arrival or by netem)."""
    if not loss_pct:
        return "lossless" + (f", {delay_ms} ms delay" if delay_ms else "")
    loss = f"{loss_pct} % loss per {loss_unit} ({loss_via})"
    return f"{loss} + {delay_ms} ms delay" if delay_ms else f"{loss}, no delay"


def cell_context(cc, rates_mbit, loss_pct, delay_ms, endpoints, where="host: mpnvme-lab namespaces", kernel=None,
                 loss_unit="segment", loss_via="nft"):
    """The conditions a cell ran under, stored with the cell (results.json)
    and shown beside it: a figure is only comparable with one measured the
    same way."""
    return {"cc": cc, "kernel": kernel or os.uname().release, "where": where, "rates_mbit": list(rates_mbit),
            "loss_pct": loss_pct, "delay_ms": delay_ms, "endpoints": endpoints,
            "loss_unit": loss_unit if loss_pct else None, "loss_via": loss_via if loss_pct else None,
            "conditions": condition_text(loss_pct, delay_ms, loss_unit, loss_via)}


def lab_conditions(name, cc, endpoints):
    """Read back from the lab's namespaces what a cell claims: the
    congestion control each side runs and the MPTCP endpoints each has. Dies
    when the congestion control is not the one asked for."""
    got = {}
    for side in ("host", "target"):
        got[side] = lab(name, "exec", side, "sysctl", "-n", "net.ipv4.tcp_congestion_control").strip()
        if got[side] != cc:
            die(f"lab {name}: the {side} namespace runs {got[side]}, not {cc}")
    count = {side: len(lab(name, "exec", side, "ip", "mptcp", "endpoint", "show").splitlines()) for side in ("host", "target")}
    return {"cc_measured": got, "endpoint_count": count, "endpoints": endpoints}
