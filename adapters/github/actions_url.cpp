// The Actions Service client: config URLs, URL building and time parsing.
#include "adapters/github/actions_client.hpp"

#include <algorithm>
#include <atomic>
#include <ctime>

#include "adapters/github/actions_internal.hpp"
#include "adapters/github/auth.hpp"
#include "runtime/log.hpp"
#include "runtime/secrets.hpp"

namespace headroom::github {

namespace detail {

bool has_suffix_ci(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size())
    return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i])
      return false;
  return true;
}

bool equals_ci(std::string_view a, std::string_view b) {
  return a.size() == b.size() && has_suffix_ci(a, b);
}

std::string join_url(std::string base, std::string_view path) {
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  while (!path.empty() && path.front() == '/')
    path.remove_prefix(1);
  return base + "/" + std::string{path};
}

std::string with_query(std::string url, std::string_view name, std::string_view value) {
  url += url.find('?') == std::string::npos ? '?' : '&';
  url += name;
  url += '=';
  url += http::url_encode(value);
  return url;
}

std::string scale_sets_path(int64_t id, std::string_view tail) {
  std::string p = "_apis/runtime/runnerscalesets";
  if (id != 0)
    p += "/" + std::to_string(id);
  if (!tail.empty())
    p += "/" + std::string{tail};
  return p;
}

}  // namespace detail

using namespace detail;

// ---- config URL ----

std::variant<config_url, std::string> parse_config_url(std::string_view url) {
  std::string u{url};
  while (!u.empty() && u.back() == '/')
    u.pop_back();
  const auto scheme_end = u.find("://");
  if (scheme_end == std::string::npos || (u.compare(0, scheme_end, "https") != 0 && u.compare(0, scheme_end, "http") != 0))
    return "githubConfigUrl \"" + u + "\": must start with https:// (or http:// for a test service)";
  const auto host_end = u.find('/', scheme_end + 3);
  const std::string scheme = u.substr(0, scheme_end);
  const std::string host = u.substr(scheme_end + 3, host_end == std::string::npos ? std::string::npos : host_end - scheme_end - 3);
  if (host.empty())
    return "githubConfigUrl \"" + u + "\": has no host";
  std::vector<std::string> parts;
  if (host_end != std::string::npos) {
    std::string_view path{u};
    path.remove_prefix(host_end + 1);
    while (!path.empty()) {
      const auto slash = path.find('/');
      parts.emplace_back(path.substr(0, slash));
      if (slash == std::string_view::npos)
        break;
      path.remove_prefix(slash + 1);
    }
  }
  config_url c;
  c.url = u;
  if (parts.size() == 1 && !parts[0].empty()) {
    c.level = config_url::scope::organization;
    c.organization = parts[0];
  } else if (parts.size() == 2 && equals_ci(parts[0], "enterprises") && !parts[1].empty()) {
    c.level = config_url::scope::enterprise;
    c.enterprise = parts[1];
  } else if (parts.size() == 2 && !parts[0].empty() && !parts[1].empty()) {
    c.level = config_url::scope::repository;
    c.organization = parts[0];
    c.repository = parts[1];
  } else {
    return "githubConfigUrl \"" + u + "\": must name an organization, a repository or an enterprise";
  }
  const bool hosted = equals_ci(host, "github.com") || equals_ci(host, "www.github.com") ||
                      equals_ci(host, "github.localhost") || has_suffix_ci(host, ".ghe.com");
  if (!hosted)
    c.api_base = scheme + "://" + host + "/api/v3";
  else if (equals_ci(host, "www.github.com"))
    c.api_base = scheme + "://api.github.com";
  else
    c.api_base = scheme + "://api." + host;
  return c;
}

std::string config_url::registration_token_path() const {
  switch (level) {
    case scope::organization:
      return "/orgs/" + organization + "/actions/runners/registration-token";
    case scope::enterprise:
      return "/enterprises/" + enterprise + "/actions/runners/registration-token";
    case scope::repository:
      return "/repos/" + organization + "/" + repository + "/actions/runners/registration-token";
  }
  return {};
}

}  // namespace headroom::github
