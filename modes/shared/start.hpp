#pragma once

// Start-up helpers more than one mode uses: files, GitHub credentials, runner pod templates.

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "actors/runners/pods.hpp"
#include "adapters/github/actions_client.hpp"
#include "adapters/k8s/objects.hpp"
#include "modes/shared/sections.hpp"

namespace headroom::modes {

// A file's text; `error` names `what` and the path when it cannot be read.
std::string read_text(const std::string& path, std::string& error, const std::string& what);

// GitHub credentials from the environment (HEADROOM_GITHUB_TOKEN, or the App's three) or the
// mounted Secret (HEADROOM_GITHUB_SECRET_DIR, ARC's keys or headroom's), registered as secrets.
// A variable of the process's environment (as the composition root read it), "" when unset.
std::string env_value(const std::map<std::string, std::string>& env, const char* name);

// `installation_optional`: an App without an installation id is allowed (installation_id 0: the
// scheduler finds each organization's installation itself).
std::variant<github::credentials, std::string> github_credentials(const std::map<std::string, std::string>& env,
                                                                  bool installation_optional = false);

// The scheduler's second GitHub App, for personal accounts (seed 003 has one App per account kind):
// HEADROOM_GITHUB_USER_APP_ID with HEADROOM_GITHUB_USER_APP_PRIVATE_KEY (or _FILE), or the mounted
// Secret's github_user_app_id and github_user_app_private_key (user-app-id, user-private-key),
// into `creds` (which must hold the first App). "" when none is set or it was read; else the error.
std::string github_user_app(const std::map<std::string, std::string>& env, github::credentials& creds);

// A key of the mounted GitHub Secret, under the first of `names` that exists; "" when none does.
std::string secret_key(const std::string& dir, std::initializer_list<const char*> names, bool trim, std::string& found,
                       std::string& error);

// A quantity ("500m", "2Gi") into milli-units or units; an error names `where`.
std::optional<std::string> quantity(const std::string& text, const std::string& where, int64_t& out, bool milli);
// Extended resources (checked whole and positive by the config reader) into a request list.
std::optional<std::string> extended_requests(const k8s::string_pairs& extended, k8s::resource_list& out);

// A runner pod template into a spec and what one runner requests (quantities checked); an error
// names the key under `at`.
std::optional<std::string> apply_runner(const runner_section& r, const std::string& at, actors::runners::runner_spec& s,
                                        k8s::resource_list& requests);

}  // namespace headroom::modes
