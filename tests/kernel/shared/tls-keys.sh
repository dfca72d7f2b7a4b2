# SPDX-License-Identifier: GPL-2.0-only
# TLS test identities of the kernel lab, sourced by the guest's nvmet
# set-up and by tls-case.sh (engine side). Test keys only, generated with
# nvme gen-tls-key: they protect nothing outside the lab.
TLS_SUBNQN=nqn.2026-12.io.mpnvme:kernel-tls
TLS_PORT=4430
# host NQN, the derivation of the nvme-cli that inserted its PSKs (rfc:
# 2.16, RFC 8446's HkdfLabel; compat: Debian 13's 2.13), its configured PSK
TLS_HOSTS="
nqn.2026-12.io.mpnvme:tls-sha256 rfc NVMeTLSkey-1:01:VFGB6a+963UB5NchCA0KqJS3xyEglrH1/dQuV9yIvj5jw6Md:
nqn.2026-12.io.mpnvme:tls-sha384 rfc NVMeTLSkey-1:02:lgzAFTfQqsnsos/bmzuc1qnOet+Vfjk1SGtmNs38Se1eHbh1XvYF52wdbFfoW0/3aIAWEA==:
nqn.2026-12.io.mpnvme:tls-compat compat NVMeTLSkey-1:01:F3+f0NKzzcrFDKMRFgpYWgJEPTFIF19BUml0JbljxNeNnT1n:
"
# A valid key nvmet does not have.
TLS_WRONG_KEY=NVMeTLSkey-1:01:7nabTdHIZdD2b3rdo/mRXS96mLOEttZbx/aQaFcCR7yMqVqS:
