#include "testenv/test_certs.hpp"

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace headroom::testenv {

namespace {

using key_ptr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using cert_ptr = std::unique_ptr<X509, decltype(&X509_free)>;

key_ptr new_key() { return key_ptr{EVP_EC_gen("P-256"), &EVP_PKEY_free}; }

std::string pem_of(X509* c) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, c);
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  std::string out{data, static_cast<size_t>(n)};
  BIO_free(b);
  return out;
}

std::string pem_of(EVP_PKEY* k) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(b, k, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  std::string out{data, static_cast<size_t>(n)};
  BIO_free(b);
  return out;
}

cert_ptr read_cert(const std::string& pem) {
  BIO* b = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  cert_ptr c{PEM_read_bio_X509(b, nullptr, nullptr, nullptr), &X509_free};
  BIO_free(b);
  if (!c)
    throw std::runtime_error("test_certs: bad CA certificate");
  return c;
}

key_ptr read_key(const std::string& pem) {
  BIO* b = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  key_ptr k{PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr), &EVP_PKEY_free};
  BIO_free(b);
  if (!k)
    throw std::runtime_error("test_certs: bad CA key");
  return k;
}

void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr)
    throw std::runtime_error("test_certs: extension " + value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

cert_ptr new_cert(const std::string& cn, EVP_PKEY* key, long valid_seconds) {
  cert_ptr c{X509_new(), &X509_free};
  X509_set_version(c.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(c.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(c.get()), valid_seconds);
  X509_set_pubkey(c.get(), key);
  X509_NAME* name = X509_get_subject_name(c.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return c;
}

}  // namespace

pem_pair make_ca(const std::string& common_name) {
  auto key = new_key();
  auto cert = new_cert(common_name, key.get(), 30L * 86'400);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  add_ext(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_ext(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  add_ext(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
  X509_sign(cert.get(), key.get(), EVP_sha256());
  return {pem_of(cert.get()), pem_of(key.get())};
}

pem_pair issue_server_cert(const pem_pair& ca, const std::string& common_name, const std::vector<std::string>& dns_names,
                           const std::vector<std::string>& ip_addresses, long valid_seconds, bool client_auth_too) {
  auto ca_cert = read_cert(ca.cert);
  auto ca_key = read_key(ca.key);
  auto key = new_key();
  auto cert = new_cert(common_name, key.get(), valid_seconds);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get()));
  std::string san;
  for (const auto& d : dns_names)
    san += (san.empty() ? "" : ",") + std::string{"DNS:"} + d;
  for (const auto& ip : ip_addresses)
    san += (san.empty() ? "" : ",") + std::string{"IP:"} + ip;
  if (!san.empty())
    add_ext(cert.get(), ca_cert.get(), NID_subject_alt_name, san);
  add_ext(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_ext(cert.get(), ca_cert.get(), NID_ext_key_usage, client_auth_too ? "serverAuth,clientAuth" : "serverAuth");
  X509_sign(cert.get(), ca_key.get(), EVP_sha256());
  return {pem_of(cert.get()), pem_of(key.get())};
}

std::string gates_webhook_config(int port, const std::string& ca_pem) {
  std::ifstream in{std::string{HEADROOM_SOURCE_DIR} + "/deploy/gates-webhook.yaml"};
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string shipped = ss.str();
  const auto service = shipped.find("      service: {");
  if (service == std::string::npos)
    throw std::runtime_error("test_certs: deploy/gates-webhook.yaml has no clientConfig.service");
  std::string ca(4 * ((ca_pem.size() + 2) / 3) + 1, '\0');
  ca.resize(static_cast<size_t>(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(ca.data()),
                                                reinterpret_cast<const unsigned char*>(ca_pem.data()),
                                                static_cast<int>(ca_pem.size()))));
  // Each webhook's Service becomes the URL of its path on 127.0.0.1, its empty caBundle the test CA.
  std::istringstream lines{shipped};
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("      service: {", 0) == 0) {
      const auto at = line.find("path: ");
      const auto path = line.substr(at + 6, line.find(',', at) - at - 6);
      out += "      url: https://127.0.0.1:" + std::to_string(port) + path + "\n";
    } else if (line == "      caBundle: \"\"") {
      out += "      caBundle: " + ca + "\n";
    } else {
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace headroom::testenv
