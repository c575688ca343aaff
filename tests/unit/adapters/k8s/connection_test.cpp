#include "adapters/k8s/connection.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "runtime/secrets.hpp"

using namespace headroom::k8s;

namespace {

struct kubeconfig_files : ::testing::Test {
  std::string dir = ::testing::TempDir() + "/headroom-kubeconfig-" + std::to_string(::getpid());
  void SetUp() override { std::system(("mkdir -p " + dir).c_str()); }
  void TearDown() override {
    std::system(("rm -rf " + dir).c_str());
    headroom::runtime::secret_registry::global().clear();
  }
  std::string write(const std::string& name, const std::string& text) {
    const auto path = dir + "/" + name;
    std::ofstream{path} << text;
    return path;
  }
  static std::string base(const std::string& cluster_extra, const std::string& user) {
    return "apiVersion: v1\nkind: Config\ncurrent-context: main\ncontexts:\n- name: main\n  context: {cluster: c, user: u}\n"
           "clusters:\n- name: c\n  cluster:\n    server: https://10.1.2.3:6443/\n" + cluster_extra +
           "users:\n- name: u\n  user:\n" + user;
  }
  static std::string message(const connection_result& r) {
    return std::holds_alternative<connection_error>(r) ? std::get<connection_error>(r).message : "";
  }
};

}  // namespace

TEST_F(kubeconfig_files, token_and_ca_data) {
  // "-----BEGIN CERTIFICATE-----\n" base64-encoded stands in for a CA bundle.
  auto path = write("kc", base("    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n",
                               "    token: s3cr3t-token-value\n"));
  auto r = load_kubeconfig(path);
  ASSERT_TRUE(std::holds_alternative<connection>(r)) << message(r);
  const auto& c = std::get<connection>(r);
  EXPECT_EQ(c.server, "https://10.1.2.3:6443") << "trailing slash dropped";
  EXPECT_EQ(c.tls.ca_pem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(c.token(), "s3cr3t-token-value");
  EXPECT_EQ(headroom::runtime::redact("Bearer s3cr3t-token-value"), "Bearer [REDACTED]") << "the token is a secret";
}

TEST_F(kubeconfig_files, files_relative_to_the_kubeconfig_and_a_rotating_token_file) {
  write("ca.crt", "CA-PEM");
  write("client.crt", "CERT-PEM");
  write("client.key", "KEY-PEM-secret");
  write("token", "first-token-value\n");
  auto path = write("kc", base("    certificate-authority: ca.crt\n",
                               "    client-certificate: client.crt\n    client-key: client.key\n    tokenFile: token\n"));
  auto r = load_kubeconfig(path);
  ASSERT_TRUE(std::holds_alternative<connection>(r)) << message(r);
  const auto& c = std::get<connection>(r);
  EXPECT_EQ(c.tls.ca_pem, "CA-PEM");
  EXPECT_EQ(c.tls.client_cert_pem, "CERT-PEM");
  EXPECT_EQ(c.tls.client_key_pem, "KEY-PEM-secret");
  EXPECT_EQ(c.token(), "first-token-value");
  EXPECT_EQ(headroom::runtime::redact("KEY-PEM-secret"), "[REDACTED]");
  // The kubelet rotates a projected token by replacing the file: the next call reads the new one.
  write("token.new", "second-token-value\n");
  std::filesystem::last_write_time(dir + "/token.new", std::filesystem::last_write_time(dir + "/token") + std::chrono::seconds(1));
  std::filesystem::rename(dir + "/token.new", dir + "/token");
  EXPECT_EQ(c.token(), "second-token-value");
}

TEST_F(kubeconfig_files, refusals_and_missing_pieces_name_the_problem) {
  EXPECT_EQ(message(load_kubeconfig(write("a", base("    insecure-skip-tls-verify: true\n", "    token: x\n")))),
            dir + "/a: clusters[c].insecure-skip-tls-verify: refused; headroom always verifies the server");
  EXPECT_NE(message(load_kubeconfig(write("b", base("", "    exec: {command: aws}\n")))).find("credential plugins are not supported"),
            std::string::npos);
  EXPECT_EQ(message(load_kubeconfig(write("c", base("", "    token: x\n")), "other")), dir + "/c: context \"other\" not found");
  EXPECT_NE(message(load_kubeconfig(write("d", base("", "    client-certificate-data: Q0VSVA==\n")))).find(
                "client-certificate and client-key must be given together"),
            std::string::npos);
  EXPECT_NE(message(load_kubeconfig(write("e", base("    certificate-authority: missing.crt\n", "    token: x\n")))).find(
                "certificate-authority: cannot read " + dir + "/missing.crt"),
            std::string::npos);
  EXPECT_NE(message(load_kubeconfig(dir + "/absent")).find("cannot read kubeconfig"), std::string::npos);
  auto http = base("", "    token: x\n");
  http.replace(http.find("https://"), 8, "http://");
  EXPECT_NE(message(load_kubeconfig(write("f", http))).find("must be an https:// URL"), std::string::npos);
}

TEST_F(kubeconfig_files, in_cluster_reads_the_service_account) {
  write("sa/ca.crt", "");
  std::system(("mkdir -p " + dir + "/sa").c_str());
  write("sa/ca.crt", "SA-CA");
  write("sa/token", "sa-token-1234567");
  auto r = in_cluster({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, dir + "/sa");
  ASSERT_TRUE(std::holds_alternative<connection>(r)) << message(r);
  EXPECT_EQ(std::get<connection>(r).server, "https://10.96.0.1:443");
  EXPECT_EQ(std::get<connection>(r).token(), "sa-token-1234567");
  EXPECT_EQ(std::get<connection>(in_cluster({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
                                            dir + "/sa"))
                .server,
            "https://[fd00::1]:443");
  EXPECT_NE(message(in_cluster({}, dir + "/sa")).find("not in a cluster"), std::string::npos);
}
