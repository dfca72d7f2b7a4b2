# SPDX-License-Identifier: GPL-2.0-only
# DH-HMAC-CHAP test identities of the kernel lab, sourced by the guest's
# nvmet set-up and by auth-case.sh (engine side). Test keys only, generated
# with nvme gen-dhchap-key: they protect nothing outside the lab.
AUTH_SUBNQN=nqn.2026-12.io.mpnvme:kernel-auth
# The same hosts on a subsystem for secure channel concatenation (engine-concat).
CONCAT_SUBNQN=nqn.2026-12.io.mpnvme:kernel-concat
# host NQN, its key, the controller's key (bidirectional) or -, nvmet's hash and DH group
AUTH_HOSTS="
nqn.2026-12.io.mpnvme:host-sha256 DHHC-1:00:PWliTg9rhU+Z3gxoCvB8Xbt71v+y3NaUIQSaZE0tGvt/rsKY: - hmac(sha256) null
nqn.2026-12.io.mpnvme:host-sha384 DHHC-1:02:WQOwyX0TdLrrd+/8ATgqOvQeYiBcxqtubJVYutV9JGYKdLDFnTQT4BFRB6BpD/rL2ehucQ==: DHHC-1:00:sgj415muxKNS/dctw7n+04GEGlHY91AfHAb5z+4jR3MPoXF0ed3j4fRaft2NkbDq2ZzRXg==: hmac(sha384) ffdhe2048
nqn.2026-12.io.mpnvme:host-sha512 DHHC-1:03:XcYFc+ZyL1Wssecuq3GEW4BaXr9z8snym8PrMWmqwGAhRyFIFrZmpkzSE2wsyIQ7zpWGBraFgQxoFD+Nz+KI/AcMvhs=: DHHC-1:00:7UvmYO6mVn4RLRg7C/muYoK2ujqQ7/62OIQXm63zKMFfiq6eUFiY/i7V2JytryCZAmjYPrOAo+6h9041vo6clWHV86U=: hmac(sha512) ffdhe4096
"
# Valid secrets nvmet does not know: the wrong host key (32 bytes) and the
# wrong controller key (64 bytes).
AUTH_WRONG_KEY=DHHC-1:00:N1C5Whiir8n9O5CWJke/gpcCi34WQDSa85r2r0Eh6nlYvQuZ:
AUTH_WRONG_CTRL_KEY=DHHC-1:00:CNbfKeSzy6QJdkVcHAeigDTSguSNfaCGXep2Tol6C0qQVASZtiYh0JEiVWzi1NKN5KCVmXbpvSYQmHOZfp2+TvSyd1U=:
