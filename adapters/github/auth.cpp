#include "adapters/github/auth.hpp"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include <algorithm>
#include <memory>

#include "runtime/secrets.hpp"
#include "runtime/json_writer.hpp"

namespace headroom::github {

std::string base64url(std::string_view bytes) {
  static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out += table[v >> 18];
    out += table[(v >> 12) & 63];
    out += table[(v >> 6) & 63];
    out += table[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    out += table[v >> 18];
    out += table[(v >> 12) & 63];
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8);
    out += table[v >> 18];
    out += table[(v >> 12) & 63];
    out += table[(v >> 6) & 63];
  }
  return out;  // unpadded, as JWTs are
}

std::string hex(std::string_view bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::variant<std::string, auth_error> app_jwt(std::string_view app_id, const std::string& private_key_pem,
                                              int64_t unix_now) {
  // Every line of the key is registered too: a fragment must not leak through an error either.
  runtime::secret_registry::global().add(private_key_pem);
  for (size_t pos = 0; pos < private_key_pem.size();) {
    const auto nl = private_key_pem.find('\n', pos);
    const auto line = private_key_pem.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (line.rfind("-----", 0) != 0)
      runtime::secret_registry::global().add(line);
    pos = nl == std::string::npos ? private_key_pem.size() : nl + 1;
  }
  if (app_id.empty())
    return auth_error{"GitHub App id is empty"};
  std::unique_ptr<BIO, decltype(&BIO_free)> bio{BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())),
                                                &BIO_free};
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr),
                                                          &EVP_PKEY_free};
  if (!key)
    return auth_error{"the GitHub App private key is not a PEM RSA private key"};
  if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_RSA)
    return auth_error{"the GitHub App private key is not an RSA key (RS256 needs one)"};
  const int64_t iat = unix_now - 60;
  const std::string header = base64url(R"({"alg":"RS256","typ":"JWT"})");
  // An App ID is a number; a client ID (Iv1.…) is a string, escaped like any other.
  const bool numeric = !app_id.empty() && app_id.size() <= 18 &&
                       std::all_of(app_id.begin(), app_id.end(), [](char c) { return c >= '0' && c <= '9'; });
  runtime::json_writer claims;
  claims.begin_object().field("iat", iat).field("exp", iat + 540).key("iss");
  if (numeric)
    claims.value(std::stoll(std::string{app_id}));
  else
    claims.value(app_id);
  claims.end_object();
  const std::string payload = base64url(claims.take());
  const std::string signing_input = header + "." + payload;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
  size_t len = 0;
  if (EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) != 1)
    return auth_error{"cannot sign the GitHub App JWT"};
  std::string signature(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &len,
                     reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size()) != 1)
    return auth_error{"cannot sign the GitHub App JWT"};
  signature.resize(len);
  return signing_input + "." + base64url(signature);
}

int64_t jwt_expiry(std::string_view jwt) {
  const auto first = jwt.find('.');
  const auto second = jwt.find('.', first + 1);
  if (first == std::string_view::npos || second == std::string_view::npos)
    return 0;
  std::string b64{jwt.substr(first + 1, second - first - 1)};
  for (auto& c : b64)
    c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (b64.size() % 4 != 0)
    b64 += '=';
  std::string payload(b64.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(payload.data()),
                                reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  if (n <= 0)
    return 0;
  payload.resize(static_cast<size_t>(n));
  // The claim's name, then JSON's optional whitespace around the colon (a token minted by
  // another library may have it; GitHub's compact ones do not).
  const auto key = payload.find("\"exp\"");
  if (key == std::string::npos)
    return 0;
  size_t i = key + 5;
  auto skip_space = [&] {
    while (i < payload.size() && (payload[i] == ' ' || payload[i] == '\t' || payload[i] == '\n' || payload[i] == '\r'))
      ++i;
  };
  skip_space();
  if (i >= payload.size() || payload[i] != ':')
    return 0;
  ++i;
  skip_space();
  int64_t exp = 0;
  for (; i < payload.size() && payload[i] >= '0' && payload[i] <= '9'; ++i)
    exp = exp * 10 + (payload[i] - '0');
  return exp;
}

bool verify_webhook_signature(std::string_view secret, std::string_view body, std::string_view header) {
  constexpr std::string_view prefix = "sha256=";
  if (header.size() != prefix.size() + 64 || header.substr(0, prefix.size()) != prefix)
    return false;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &mac_len) == nullptr)
    return false;
  const std::string expected = hex(std::string_view{reinterpret_cast<const char*>(mac), mac_len});
  std::string given{header.substr(prefix.size())};
  for (auto& c : given)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Constant time: the comparison must not tell an attacker how many leading characters matched.
  return CRYPTO_memcmp(expected.data(), given.data(), expected.size()) == 0;
}

}  // namespace headroom::github
