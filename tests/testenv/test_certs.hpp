#pragma once

// Certificates made in-process for tests that serve TLS (the admission webhook the API server
// calls): a CA, and server certificates it signs with DNS and IP subject alternative names (with
// `client_auth_too`, usable as a client certificate as well: mutual TLS between two peers).
// EC P-256 keys, so making them is fast.

#include <string>
#include <vector>

namespace headroom::testenv {

struct pem_pair {
  std::string cert, key;
};

pem_pair make_ca(const std::string& common_name);
pem_pair issue_server_cert(const pem_pair& ca, const std::string& common_name, const std::vector<std::string>& dns_names,
                           const std::vector<std::string>& ip_addresses, long valid_seconds = 86'400,
                           bool client_auth_too = false);

// The shipped gates webhook configuration (deploy/gates-webhook.yaml), its Service replaced by
// https://127.0.0.1:<port>/mutate-pods and its caBundle by `ca_pem`: the API server then calls a
// headroom running on loopback.
std::string gates_webhook_config(int port, const std::string& ca_pem);

}  // namespace headroom::testenv
