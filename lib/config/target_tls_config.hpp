// SPDX-License-Identifier: GPL-2.0-only
// mpnvme-target's secure channel settings: which ports speak TLS (nvmet's
// addr_tsas / addr_treq), and the configured PSK of each host that may use
// it (--tls-key HOSTNQN=KEY|@FILE, the JSON hosts' "tls_key", a job's
// tls_key). From those, the PSK for the identity of a ClientHello, derived
// as the host derived it (lib/tls/tls_psk.hpp).
#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/tls/tls_psk.hpp"
#include "lib/tls/tls_stream.hpp"

namespace mpnvme::target {

// A port's secure channel: none (plaintext only), optional (TLS or
// plaintext, as the host opens), required (a plaintext ICReq is refused).
enum class TlsPort : uint8_t { None, Optional, Required };
const char *tls_port_name(TlsPort t);
// What a TLS port does with a connection, by the first byte its peer sent:
// 0x16 opens a TLS handshake; anything else is plaintext NVMe/TCP, which a
// port that requires TLS refuses.
enum class FirstByte { Tls, Plaintext, Refused };
FirstByte classify_first_byte(uint8_t first, TlsPort port);

using TlsKeys = std::map<std::string, tls::ConfiguredPsk>; // host NQN -> configured PSK

// --listen entries may end in ":tls" (required) or ":tls-optional"; the
// suffix is taken off `item`.
TlsPort take_tls_suffix(std::string &item);
// The JSON port's addr "tsas" ("none", "tls1.3") and "treq" ("not
// specified", "required", "not required"), as nvmet's configfs has them.
TlsPort tls_port_from_json(const std::string &tsas, const std::string &treq, const std::string &where);
// --tls-key HOSTNQN=KEY|@FILE, repeatable. Throws std::invalid_argument
// naming the option and host, never the key.
void add_cli_tls_keys(TlsKeys &keys, const std::vector<std::string> &args);
// JSON "hosts": [{"nqn": ..., "tls_key": "NVMeTLSkey-1:..." or "@FILE"}].
void add_json_tls_keys(TlsKeys &keys, const nlohmann::json &hosts, const std::string &where);

// The TLS PSK for the identity a host offered, if one of `keys` is its
// key and `serves(subnqn)`; else nullopt and the reason. A version 1
// identity's digest tells which derivation the host's keys came from
// (RFC 8446's or older libnvme's); a version 0 one cannot, `compat`
// (--tls-compat) says. A generated identity ("NVMe1G..."), from secure
// channel concatenation, is `generated`'s to know (nullopt: none such).
using GeneratedLookup = std::function<std::optional<tls::ServerPsk>(const std::string &identity)>;
std::optional<tls::ServerPsk> psk_for_identity(const TlsKeys &keys, const std::function<bool(const std::string &)> &serves,
                                               const std::string &identity, bool compat, std::string &refusal,
                                               const GeneratedLookup &generated = {});

} // namespace mpnvme::target
