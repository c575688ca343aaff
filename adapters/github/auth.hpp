#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace headroom::github {

struct auth_error {
  std::string message;  // never contains key material
};

// A GitHub App's JWT (RS256): iss = the App (client) id, iat = now − 60 s (clock skew),
// exp = iat + 9 min, signed with the App's private key (PKCS#1 or PKCS#8 PEM). The key is
// registered as a secret before anything else happens to it.
std::variant<std::string, auth_error> app_jwt(std::string_view app_id, const std::string& private_key_pem,
                                              int64_t unix_now);

// `exp` of a JWT (no signature check: the admin token's own expiry, to refresh before it), or 0.
int64_t jwt_expiry(std::string_view jwt);

// X-Hub-Signature-256 of a webhook delivery: "sha256=" + hex HMAC-SHA256(secret, body), compared
// in constant time. False for a missing, malformed or wrong signature.
bool verify_webhook_signature(std::string_view secret, std::string_view body, std::string_view header);

std::string base64url(std::string_view bytes);
std::string hex(std::string_view bytes);

}  // namespace headroom::github
