#pragma once

#include <functional>
#include <map>
#include <string>
#include <variant>

#include "adapters/k8s/transport.hpp"

namespace headroom::k8s {

// Where the API server is and how to prove who we are.
struct connection {
  std::string server;                  // https://host:port, no trailing slash
  tls_config tls;
  std::function<std::string()> token;  // current bearer token, "" for none; may re-read a file
};

struct connection_error {
  std::string message;  // names the file and the key; never a secret
};

using connection_result = std::variant<connection, connection_error>;

// A kubeconfig: `context` or the current context; token, tokenFile, client certificate and key
// (data or files), CA (data or file). exec and auth-provider plugins are not supported (a clear
// error), nor is insecure-skip-tls-verify. Every secret read is registered for redaction.
connection_result load_kubeconfig(const std::string& path, const std::string& context = "");

// In a Pod: KUBERNETES_SERVICE_HOST/PORT, the service account token (re-read when kubelet
// rotates it) and CA bundle under `sa_dir`.
connection_result in_cluster(const std::map<std::string, std::string>& env,
                             const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// A token that lives in a file: re-read when the file changes (its mtime, checked at each call).
std::function<std::string()> token_file(std::string path);

}  // namespace headroom::k8s
