#include "adapters/github/auth.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <ctime>
#include <memory>

#include "runtime/secrets.hpp"

using namespace headroom::github;

namespace {

struct rsa_key {
  std::string private_pem, public_pem;
};

rsa_key make_key() {
  rsa_key out;
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{EVP_RSA_gen(2048), &EVP_PKEY_free};
  std::unique_ptr<BIO, decltype(&BIO_free)> priv{BIO_new(BIO_s_mem()), &BIO_free};
  std::unique_ptr<BIO, decltype(&BIO_free)> pub{BIO_new(BIO_s_mem()), &BIO_free};
  PEM_write_bio_PrivateKey(priv.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  PEM_write_bio_PUBKEY(pub.get(), key.get());
  char* data = nullptr;
  long n = BIO_get_mem_data(priv.get(), &data);
  out.private_pem.assign(data, static_cast<size_t>(n));
  n = BIO_get_mem_data(pub.get(), &data);
  out.public_pem.assign(data, static_cast<size_t>(n));
  return out;
}

std::string unbase64url(std::string s) {
  for (auto& c : s)
    c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (s.size() % 4)
    s += '=';
  std::string out(s.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  out.resize(static_cast<size_t>(n));
  while (!out.empty() && out.back() == '\0')
    out.pop_back();
  return out;
}

}  // namespace

// The JWT verifies with the App's public key and carries iss, iat = now − 60 s, exp = iat + 9 min.
TEST(github_auth, app_jwt_is_rs256_with_the_documented_claims) {
  const auto key = make_key();
  const int64_t now = 1'795'000'000;
  auto r = app_jwt("123456", key.private_pem, now);
  ASSERT_TRUE(std::holds_alternative<std::string>(r)) << std::get<auth_error>(r).message;
  const auto jwt = std::get<std::string>(r);
  const auto d1 = jwt.find('.'), d2 = jwt.rfind('.');
  EXPECT_EQ(unbase64url(jwt.substr(0, d1)), R"({"alg":"RS256","typ":"JWT"})");
  EXPECT_EQ(unbase64url(jwt.substr(d1 + 1, d2 - d1 - 1)), R"({"iat":1794999940,"exp":1795000480,"iss":123456})");
  EXPECT_EQ(jwt_expiry(jwt), 1'795'000'480);
  // JSON's whitespace around the colon ({"exp": 4102444800}), and a claim without a number.
  EXPECT_EQ(jwt_expiry("eyJhbGciOiJSUzI1NiJ9.eyJleHAiOiA0MTAyNDQ0ODAwfQ.c2ln"), 4'102'444'800);
  EXPECT_EQ(jwt_expiry("eyJhbGciOiJSUzI1NiJ9.eyJleHAiOiJzb29uIn0.c2ln"), 0) << R"({"exp":"soon"})";

  std::unique_ptr<BIO, decltype(&BIO_free)> bio{BIO_new_mem_buf(key.public_pem.data(), -1), &BIO_free};
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pub{PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr),
                                                          &EVP_PKEY_free};
  ASSERT_TRUE(pub);
  const std::string input = jwt.substr(0, d2);
  std::string sig = jwt.substr(d2 + 1);
  for (auto& c : sig)
    c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (sig.size() % 4)
    sig += '=';
  std::string raw(sig.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()), reinterpret_cast<const unsigned char*>(sig.data()),
                          static_cast<int>(sig.size()));
  raw.resize(256);  // RSA-2048 signature
  ASSERT_GE(n, 256);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
  ASSERT_EQ(EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, pub.get()), 1);
  EXPECT_EQ(EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(raw.data()), raw.size(),
                             reinterpret_cast<const unsigned char*>(input.data()), input.size()),
            1);
  // A client id (non-numeric) is a JSON string.
  auto by_client_id = app_jwt("Iv1.abc123", key.private_pem, now);
  const auto j2 = std::get<std::string>(by_client_id);
  EXPECT_NE(unbase64url(j2.substr(j2.find('.') + 1, j2.rfind('.') - j2.find('.') - 1)).find(R"("iss":"Iv1.abc123")"),
            std::string::npos);
}

// A bad key is an error that says what is wrong without a byte of the key; the key is a secret.
TEST(github_auth, bad_key_error_holds_no_key_material) {
  const std::string not_a_key = "-----BEGIN RSA PRIVATE KEY-----\nTUlJRW93SUJBQUtDQVFFQXUxU1UxTGZWTFBIQ296TXhIMk1v\n-----END RSA PRIVATE KEY-----\n";
  auto r = app_jwt("1", not_a_key, 0);
  ASSERT_TRUE(std::holds_alternative<auth_error>(r));
  const auto& msg = std::get<auth_error>(r).message;
  EXPECT_EQ(msg, "the GitHub App private key is not a PEM RSA private key");
  EXPECT_EQ(headroom::runtime::redact("leaked TUlJRW93SUJBQUtDQVFFQXUxU1UxTGZWTFBIQ296TXhIMk1v here"), "leaked [REDACTED] here");
  headroom::runtime::secret_registry::global().clear();
}

// GitHub's documented example: secret "It's a Secret to Everybody", payload "Hello, World!".
TEST(github_auth, webhook_signature_matches_githubs_example) {
  const std::string secret = "It's a Secret to Everybody";
  const std::string body = "Hello, World!";
  EXPECT_TRUE(verify_webhook_signature(secret, body, "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"));
  EXPECT_TRUE(verify_webhook_signature(secret, body, "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17"));
  EXPECT_FALSE(verify_webhook_signature(secret, body, "sha256=857107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"));
  EXPECT_FALSE(verify_webhook_signature(secret, body + " ", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"));
  EXPECT_FALSE(verify_webhook_signature(secret, body, "sha1=757107ea0eb2509fc211221cce984b8a37570b6d"));
  EXPECT_FALSE(verify_webhook_signature(secret, body, ""));
  EXPECT_FALSE(verify_webhook_signature(secret, body, "sha256=757107ea"));
}
