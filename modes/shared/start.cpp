#include "modes/shared/start.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "adapters/k8s/quantity.hpp"
#include "runtime/secrets.hpp"

namespace headroom::modes {

std::optional<std::string> quantity(const std::string& text, const std::string& where, int64_t& out, bool milli) {
  auto q = k8s::parse_quantity(text);
  if (auto* e = std::get_if<k8s::quantity_error>(&q))
    return where + ": " + e->message;
  const auto& v = std::get<k8s::quantity>(q);
  out = milli ? v.milli : v.units;
  if (out <= 0)
    return where + ": must be positive, found '" + text + "'";
  return std::nullopt;
}

std::optional<std::string> extended_requests(const k8s::string_pairs& extended, k8s::resource_list& out) {
  for (const auto& [name, amount] : extended) {
    int64_t v = 0;
    if (auto e = quantity(amount, name, v, false))
      return *e;
    out.add(name, v);
  }
  return std::nullopt;
}

std::string read_text(const std::string& path, std::string& error, const std::string& what) {
  std::ifstream in{path};
  if (!in) {
    error = what + " " + path + ": cannot open";
    return {};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<std::string> apply_runner(const runner_section& r, const std::string& at, actors::runners::runner_spec& s,
                                        k8s::resource_list& requests) {
  // The short form, or what the runner's pod template says (its runner container's requests).
  const auto* f = r.template_facts ? &*r.template_facts : nullptr;
  const std::string res_at = f ? at + ".template.spec.containers[runner].resources.requests" : at + ".resources";
  s.runner_cpu = f ? f->cpu : r.cpu;
  s.runner_memory = f ? f->memory : r.memory;
  int64_t v = 0;
  if (auto e = quantity(s.runner_cpu, res_at + ".cpu", v, true))
    return *e;
  requests.cpu_milli = v;
  if (auto e = quantity(s.runner_memory, res_at + ".memory", v, false))
    return *e;
  requests.memory = v;
  s.runner_extended = f ? f->extended : r.extended;
  if (auto e = extended_requests(s.runner_extended, requests))
    return *e;
  if (f) {
    s.runner_template = r.template_json;
    s.runner_image = f->image;
    s.node_selector = f->node_selector;
    s.tolerations = f->tolerations;
    s.required_node_affinity = f->required_node_affinity;
    s.service_account = f->service_account;
  } else {
    s.runner_image = r.image;
    s.runner_command = r.command;
    s.node_selector = r.node_selector;
    for (const auto& t : r.tolerations)
      s.tolerations.push_back(k8s::toleration{t.key, t.op, t.value, t.effect, std::nullopt});
    s.service_account = r.service_account;
  }
  s.user_hook_template = r.hook_template;
  using mode = actors::runners::runner_spec::container_mode;
  s.mode = r.container_mode == "kubernetes-novolume" ? mode::kubernetes_novolume
           : r.container_mode == "kubernetes"        ? mode::kubernetes
           : r.container_mode == "dind"              ? mode::dind
                                                     : mode::none;
  s.work_volume_claim = r.work_volume_claim;
  return std::nullopt;
}

// ARC's name first,
// then headroom's own); "" when none does. Tokens and ids lose surrounding whitespace (a Secret made
// from a file often ends in a newline); a PEM keeps its text.
std::string secret_key(const std::string& dir, std::initializer_list<const char*> names, bool trim, std::string& found,
                       std::string& error) {
  for (const char* name : names) {
    const std::string path = dir + "/" + name;
    std::ifstream in{path};
    if (!in)
      continue;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string v = ss.str();
    if (trim) {
      const auto first = v.find_first_not_of(" \t\r\n");
      v = first == std::string::npos ? std::string{} : v.substr(first, v.find_last_not_of(" \t\r\n") - first + 1);
    }
    if (v.empty()) {
      error = std::string{"key "} + name + " is empty";
      return {};
    }
    found = name;
    return v;
  }
  return {};
}

std::string env_value(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string{} : it->second;
}

std::variant<github::credentials, std::string> github_credentials(const std::map<std::string, std::string>& env,
                                                                  bool installation_optional) {
  auto get = [&env](const char* name) { return env_value(env, name); };
  github::credentials creds;
  creds.personal_access_token = get("HEADROOM_GITHUB_TOKEN");
  creds.app_id = get("HEADROOM_GITHUB_APP_ID");
  std::string installation = get("HEADROOM_GITHUB_APP_INSTALLATION_ID");
  creds.private_key_pem = get("HEADROOM_GITHUB_APP_PRIVATE_KEY");
  // The Secret the chart mounts (githubConfigSecret / github.existingSecret), with ARC's keys or
  // headroom's: what the environment does not set comes from there.
  const std::string dir = get("HEADROOM_GITHUB_SECRET_DIR");
  std::string where = "the environment";
  if (!dir.empty() && creds.personal_access_token.empty() && creds.app_id.empty()) {
    const std::string secret = get("HEADROOM_GITHUB_SECRET_NAME").empty() ? dir : "Secret " + get("HEADROOM_GITHUB_SECRET_NAME");
    where = secret;
    std::string found, error;
    creds.personal_access_token = secret_key(dir, {"github_token", "token"}, true, found, error);
    if (error.empty())
      creds.app_id = secret_key(dir, {"github_app_id", "app-id"}, true, found, error);
    if (error.empty() && !creds.app_id.empty()) {
      installation = secret_key(dir, {"github_app_installation_id", "installation-id"}, true, found, error);
      if (error.empty() && installation.empty() && !installation_optional)
        return secret + ": key github_app_installation_id (or installation-id) is missing; a GitHub App needs it with github_app_id";
      if (error.empty())
        creds.private_key_pem = secret_key(dir, {"github_app_private_key", "private-key"}, false, found, error);
      if (error.empty() && creds.private_key_pem.empty())
        return secret + ": key github_app_private_key (or private-key) is missing; a GitHub App needs it with github_app_id";
    }
    if (!error.empty())
      return secret + ": " + error;
    if (creds.personal_access_token.empty() && creds.app_id.empty())
      return secret + ": no GitHub credentials: set key github_token (a PAT), or github_app_id, github_app_installation_id and "
                      "github_app_private_key for a GitHub App (ARC's keys; token, app-id, installation-id and private-key work too)";
  }
  // Without an installation id (where allowed), installation_id stays 0: each account's is found.
  if (!creds.app_id.empty() && !(installation_optional && installation.empty())) {
    try {
      size_t used = 0;
      creds.installation_id = std::stoll(installation, &used);
      if (used != installation.size())
        throw std::invalid_argument{"trailing"};
    } catch (...) {
      return (where == "the environment" ? std::string{"HEADROOM_GITHUB_APP_INSTALLATION_ID"} : where + ": github_app_installation_id") +
             ": expected the App installation's number, found '" + installation.substr(0, 32) + "'";
    }
  }
  if (!creds.app_id.empty()) {
    if (creds.private_key_pem.empty() && !get("HEADROOM_GITHUB_APP_PRIVATE_KEY_FILE").empty()) {
      std::string error;
      creds.private_key_pem = read_text(get("HEADROOM_GITHUB_APP_PRIVATE_KEY_FILE"), error, "HEADROOM_GITHUB_APP_PRIVATE_KEY_FILE");
      if (!error.empty())
        return error;
    }
    if (creds.private_key_pem.empty())
      return "HEADROOM_GITHUB_APP_PRIVATE_KEY or HEADROOM_GITHUB_APP_PRIVATE_KEY_FILE: required with HEADROOM_GITHUB_APP_ID";
  }
  if (creds.personal_access_token.empty() && creds.app_id.empty())
    return "GitHub credentials: set HEADROOM_GITHUB_TOKEN, or HEADROOM_GITHUB_APP_ID with its installation id and private key, "
           "or mount a Secret with them (HEADROOM_GITHUB_SECRET_DIR; the chart's githubConfigSecret)";
  auto& secrets = runtime::secret_registry::global();
  secrets.add(creds.personal_access_token);
  secrets.add(creds.private_key_pem);
  return creds;
}

std::string github_user_app(const std::map<std::string, std::string>& env, github::credentials& creds) {
  auto get = [&env](const char* name) { return env_value(env, name); };
  std::string id = get("HEADROOM_GITHUB_USER_APP_ID");
  std::string key = get("HEADROOM_GITHUB_USER_APP_PRIVATE_KEY");
  std::string where = "HEADROOM_GITHUB_USER_APP_ID";
  const std::string dir = get("HEADROOM_GITHUB_SECRET_DIR");
  if (id.empty() && !dir.empty()) {
    const std::string secret = get("HEADROOM_GITHUB_SECRET_NAME").empty() ? dir : "Secret " + get("HEADROOM_GITHUB_SECRET_NAME");
    std::string found, error;
    id = secret_key(dir, {"github_user_app_id", "user-app-id"}, true, found, error);
    if (error.empty() && !id.empty())
      key = secret_key(dir, {"github_user_app_private_key", "user-private-key"}, false, found, error);
    if (!error.empty())
      return secret + ": " + error;
    if (!id.empty() && key.empty())
      return secret + ": key github_user_app_private_key (or user-private-key) is missing; the second GitHub App needs it with "
                      "github_user_app_id";
    where = secret + ": github_user_app_id";
  }
  if (id.empty())
    return {};
  if (key.empty() && !get("HEADROOM_GITHUB_USER_APP_PRIVATE_KEY_FILE").empty()) {
    std::string error;
    key = read_text(get("HEADROOM_GITHUB_USER_APP_PRIVATE_KEY_FILE"), error, "HEADROOM_GITHUB_USER_APP_PRIVATE_KEY_FILE");
    if (!error.empty())
      return error;
  }
  if (key.empty())
    return "HEADROOM_GITHUB_USER_APP_PRIVATE_KEY or HEADROOM_GITHUB_USER_APP_PRIVATE_KEY_FILE: required with HEADROOM_GITHUB_USER_APP_ID";
  if (creds.app_id.empty())
    return where + ": a second GitHub App (for personal accounts) needs the first, for organizations (github_app_id or "
                   "HEADROOM_GITHUB_APP_ID); with a personal access token no App is used";
  if (id == creds.app_id)
    return where + ": the second GitHub App is the first one (" + id.substr(0, 32) + "); leave it unset to use one App for every account";
  runtime::secret_registry::global().add(key);
  creds.user_app_id = id;
  creds.user_app_private_key_pem = key;
  return {};
}

}  // namespace headroom::modes
