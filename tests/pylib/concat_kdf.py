# SPDX-License-Identifier: GPL-2.0-only
"""Secure channel concatenation's key derivation, from the specification's
formulas with Python's own hmac and hashlib (no code of mpnvme's, no
OpenSSL KDF), for the unit test's vectors and the raw test host alike:
  generated PSK  HMAC_H(KS, C1 || C2)
  digest         base64(HMAC_H(PSK, NQNh || " " || NQNc || " NVMe-over-Fabrics"))
  identity       "NVMe1G<hh> NQNh NQNc digest"
  TLS PSK        HKDF-Expand-Label(HKDF-Extract(0^L, PSK), "nvme-tls-psk", "<hh> digest", L)
"""
import base64
import hashlib
import hmac

# The hash identifiers of DH-HMAC-CHAP (and of the identity's <hh>).
HASHES = {1: "sha256", 2: "sha384"}


def hkdf_expand_label(h, prk, label, context, length):
    """RFC 8446's HKDF-Expand-Label, written out so that no KDF of a
    library stands between the vectors and the formula."""
    full = b"tls13 " + label
    info = length.to_bytes(2, "big") + bytes([len(full)]) + full + bytes([len(context)]) + context
    out, block, i = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([i]), h).digest()
        out += block
        i += 1
    return out[:length]


def derive(hash_id, ks, c1, c2, hostnqn, subnqn):
    """The generated PSK, its identity and its TLS PSK for one transaction
    (NQNs as str)."""
    h = HASHES[hash_id]
    n = hashlib.new(h).digest_size
    psk = hmac.new(ks, c1 + c2, h).digest()
    digest = base64.b64encode(hmac.new(psk, f"{hostnqn} {subnqn} NVMe-over-Fabrics".encode(), h).digest()).decode()
    prk = hmac.new(bytes(n), psk, h).digest()
    tls = hkdf_expand_label(h, prk, b"nvme-tls-psk", f"{hash_id:02d} {digest}".encode(), n)
    return psk, f"NVMe1G{hash_id:02d} {hostnqn} {subnqn} {digest}", tls
