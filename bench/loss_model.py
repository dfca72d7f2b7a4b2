# SPDX-License-Identifier: GPL-2.0-only
"""Loss: what the lab dropped and what the senders' TCP did about it, and
what a Reno-like flow can carry at a loss rate and round trip (the PFTK
model), the ceiling the lossy cells are set beside."""
import json
import math

from common import lab


def lab_loss(name):
    """The lab's loss record (mpnvme-lab counters --json): per direction the
    packets dropped and the sender's TCP counters."""
    return json.loads(lab(name, "counters", "--json"))["directions"]


def loss_delta(before, after, read):
    """What one run did in its data direction (reads: the target sends):
    the lab's drops and the sender's segments, retransmissions, timeouts
    and MPTCP-level retransmissions."""
    way = "to_host" if read else "to_target"
    a, b = before[way], after[way]
    out = {"dropped": b["dropped_packets"] - a["dropped_packets"]}
    for k in ("TcpOutSegs", "TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes", "MPTcpExtMPTCPRetrans"):
        out[k] = b["sender_tcp"][k] - a["sender_tcp"][k]
    return out


MSS = 1448  # bytes of TCP payload per segment on the lab's 1500-byte paths


def flow_rate_mib_s(p, rtt_s, rto_s=None):
    """The rate one Reno-like flow sustains at loss-event rate `p` per
    segment and round trip `rtt_s`, timeouts included: the PFTK model
    (Padhye, Firoiu, Towsley, Kurose 1998) with one segment per ACK, which
    reduces to Mathis's MSS / RTT x sqrt(3/2) / sqrt(p) when timeouts are
    rare. Linux's cubic runs in its Reno-friendly region at these windows
    (a few tens of segments). The retransmission timeout is Linux's with a
    steady round trip: RTT + 200 ms."""
    if p <= 0 or rtt_s <= 0:
        return math.inf
    t0 = rto_s if rto_s else rtt_s + 0.2
    per_segment = rtt_s * math.sqrt(2 * p / 3) + t0 * min(1.0, 3 * math.sqrt(3 * p / 8)) * p * (1 + 32 * p * p)
    return MSS / per_segment / 1048576


def flow_estimate(p, rtt_ms, flows, line_per_path_mib_s):
    """What `flows` (data flows per path) at loss rate `p` and round trips
    `rtt_ms` (per path) can carry, each path capped by its line: MiB/s."""
    total = 0.0
    for f, rtt in zip(flows, rtt_ms):
        if f:
            total += min(line_per_path_mib_s, f * flow_rate_mib_s(p, rtt / 1000))
    return total
