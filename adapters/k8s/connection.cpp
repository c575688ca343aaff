#include "adapters/k8s/connection.hpp"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <mutex>
#include <sstream>

#include "runtime/secrets.hpp"

namespace headroom::k8s {

namespace {

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return false;
  std::stringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

bool base64_decode(const std::string& in, std::string& out) {
  std::string clean;
  for (char c : in)
    if (c != '\n' && c != '\r' && c != ' ')
      clean.push_back(c);
  if (clean.size() % 4 != 0)
    return false;
  out.resize(clean.size() / 4 * 3);
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()), static_cast<int>(clean.size()));
  if (n < 0)
    return false;
  size_t pad = 0;
  if (!clean.empty() && clean.back() == '=')
    pad = (clean.size() > 1 && clean[clean.size() - 2] == '=') ? 2 : 1;
  out.resize(static_cast<size_t>(n) - pad);
  return true;
}

std::string resolve(const std::string& base_dir, const std::string& path) {
  return path.empty() || path.front() == '/' ? path : base_dir + "/" + path;
}

// Reads `<key>-data` (base64) or `<key>` (a file path relative to the kubeconfig) into `out`.
std::optional<connection_error> data_or_file(const YAML::Node& node, const std::string& key, const std::string& where,
                                             const std::string& base_dir, std::string& out, bool secret) {
  if (auto data = node[key + "-data"]; data && data.IsScalar()) {
    if (!base64_decode(data.Scalar(), out))
      return connection_error{where + "." + key + "-data: not valid base64"};
  } else if (auto file = node[key]; file && file.IsScalar()) {
    const auto path = resolve(base_dir, file.Scalar());
    if (!read_file(path, out))
      return connection_error{where + "." + key + ": cannot read " + path};
  }
  if (secret && !out.empty())
    runtime::secret_registry::global().add(out);
  return std::nullopt;
}

// The `field` of the entry called `name` in a kubeconfig list. (A default YAML::Node counts as
// defined in yaml-cpp, so absence is an empty optional, not a node.)
std::optional<YAML::Node> find_named(const YAML::Node& list, const std::string& name, const char* field) {
  if (list && list.IsSequence())
    for (const auto& item : list)
      if (item["name"] && item["name"].IsScalar() && item["name"].Scalar() == name && item[field] &&
          item[field].IsMap())
        return item[field];
  return std::nullopt;
}

}  // namespace

std::function<std::string()> token_file(std::string path) {
  struct state {
    std::mutex m;
    std::string path, token;
    struct timespec mtime{};
  };
  auto st = std::make_shared<state>();
  st->path = std::move(path);
  // One stat(2) a request (a microsecond, against a request's milliseconds) tells whether the
  // kubelet has rotated it: no clock, no window in which a rotated token goes unread.
  return [st] {
    std::lock_guard<std::mutex> g{st->m};
    struct stat sb{};
    if (stat(st->path.c_str(), &sb) != 0)
      return st->token;  // keep the last good token while the file is being replaced
    if (!st->token.empty() && sb.st_mtim.tv_sec == st->mtime.tv_sec && sb.st_mtim.tv_nsec == st->mtime.tv_nsec)
      return st->token;
    std::string fresh;
    if (read_file(st->path, fresh)) {
      while (!fresh.empty() && (fresh.back() == '\n' || fresh.back() == '\r' || fresh.back() == ' '))
        fresh.pop_back();
      if (!fresh.empty()) {
        runtime::secret_registry::global().add_ephemeral(fresh);  // a projected token rotates
        st->token = fresh;
        st->mtime = sb.st_mtim;
      }
    }
    return st->token;
  };
}

connection_result load_kubeconfig(const std::string& path, const std::string& context) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return connection_error{path + ": cannot read kubeconfig: " + e.what()};
  }
  const std::string base_dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  std::string ctx_name = context;
  if (ctx_name.empty()) {
    if (!root["current-context"] || root["current-context"].Scalar().empty())
      return connection_error{path + ": no current-context and no context given"};
    ctx_name = root["current-context"].Scalar();
  }
  const auto ctx_node = find_named(root["contexts"], ctx_name, "context");
  if (!ctx_node)
    return connection_error{path + ": context \"" + ctx_name + "\" not found"};
  const YAML::Node& ctx = *ctx_node;
  const std::string cluster_name = ctx["cluster"] ? ctx["cluster"].Scalar() : "";
  const std::string user_name = ctx["user"] ? ctx["user"].Scalar() : "";
  const auto cluster_node = find_named(root["clusters"], cluster_name, "cluster");
  if (!cluster_node)
    return connection_error{path + ": cluster \"" + cluster_name + "\" of context \"" + ctx_name + "\" not found"};
  const YAML::Node& cluster = *cluster_node;
  const std::string where = path + ": clusters[" + cluster_name + "]";
  connection c;
  if (!cluster["server"] || cluster["server"].Scalar().rfind("https://", 0) != 0)
    return connection_error{where + ".server: must be an https:// URL"};
  c.server = cluster["server"].Scalar();
  while (!c.server.empty() && c.server.back() == '/')
    c.server.pop_back();
  if (cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>(false))
    return connection_error{where + ".insecure-skip-tls-verify: refused; headroom always verifies the server"};
  if (auto err = data_or_file(cluster, "certificate-authority", where, base_dir, c.tls.ca_pem, false))
    return *err;

  const auto user_node = user_name.empty() ? std::nullopt : find_named(root["users"], user_name, "user");
  const std::string uwhere = path + ": users[" + user_name + "]";
  if (user_node) {
    const YAML::Node& user = *user_node;
    if (user["exec"] || user["auth-provider"])
      return connection_error{uwhere + ": exec and auth-provider credential plugins are not supported; use a token, "
                                       "a token file or a client certificate"};
    if (auto err = data_or_file(user, "client-certificate", uwhere, base_dir, c.tls.client_cert_pem, false))
      return *err;
    if (auto err = data_or_file(user, "client-key", uwhere, base_dir, c.tls.client_key_pem, true))
      return *err;
    if (c.tls.client_cert_pem.empty() != c.tls.client_key_pem.empty())
      return connection_error{uwhere + ": client-certificate and client-key must be given together"};
    if (user["token"] && !user["token"].Scalar().empty()) {
      auto token = user["token"].Scalar();
      runtime::secret_registry::global().add(token);
      c.token = [token] { return token; };
    } else if (user["tokenFile"] && !user["tokenFile"].Scalar().empty()) {
      c.token = token_file(resolve(base_dir, user["tokenFile"].Scalar()));
    }
  }
  if (!c.token)
    c.token = [] { return std::string{}; };
  return c;
}

connection_result in_cluster(const std::map<std::string, std::string>& env, const std::string& sa_dir) {
  auto host = env.find("KUBERNETES_SERVICE_HOST");
  auto port = env.find("KUBERNETES_SERVICE_PORT");
  if (host == env.end() || port == env.end() || host->second.empty() || port->second.empty())
    return connection_error{"not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set"};
  connection c;
  const bool ipv6 = host->second.find(':') != std::string::npos;
  c.server = "https://" + (ipv6 ? "[" + host->second + "]" : host->second) + ":" + port->second;
  if (!read_file(sa_dir + "/ca.crt", c.tls.ca_pem))
    return connection_error{"cannot read the service account CA bundle " + sa_dir + "/ca.crt"};
  c.token = token_file(sa_dir + "/token");
  if (c.token().empty())
    return connection_error{"cannot read the service account token " + sa_dir + "/token"};
  return c;
}

}  // namespace headroom::k8s
