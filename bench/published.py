# SPDX-License-Identifier: GPL-2.0-only
"""The published NVMe-over-MPTCP figures every report sets beside ours,
and the link-rate arithmetic to compare them as ratios to the line."""


# The published NVMe-over-MPTCP figures (MiB/s read, write) from the
# upstream selftest's commit message: 4 x 1 Gbit veth, kernel host and
# nvmet, round-robin. Every report sets them beside ours as ratios to line.
PUBLISHED = {
    ("tcp", "round-robin", "lossless"): (455, 455),
    ("mptcp", "round-robin", "lossless"): (445, 445),
    ("tcp", "round-robin", "lossy"): (144, 100),
    ("mptcp", "round-robin", "lossy"): (428, 431),
}


def mbit_to_mib_s(mbit):
    """A link rate in Mbit/s as MiB/s of payload ceiling."""
    return mbit * 1e6 / 8 / 1048576
