// The REST client's runner operations: list a scope's or a runner group's runners (every page),
// remove one.
#include "adapters/github/rest_client.hpp"

#include "adapters/github/rest_decode.hpp"

namespace headroom::github {

using namespace rest_detail;

rest_result<std::vector<rest_runner>> rest_client::list_runners(const std::string& scope) {
  return list_runners_at("list runners of " + scope, "/" + scope + "/actions/runners");
}

rest_result<std::vector<rest_runner>> rest_client::list_group_runners(const std::string& org, int64_t group_id) {
  return list_runners_at("list runners of runner group " + std::to_string(group_id) + " of " + org,
                         owner_path(org) + "/actions/runner-groups/" + std::to_string(group_id) + "/runners");
}

rest_result<std::vector<rest_runner>> rest_client::list_runners_at(const std::string& op, const std::string& path) {
  std::vector<rest_runner> all;
  for (int page = 1; page < 1000; ++page) {
    auto a = call(op, "GET", path + "?per_page=100&page=" + std::to_string(page));
    if (auto* e = std::get_if<rest_error>(&a))
      return *e;
    auto& r = std::get<answer>(a);
    if (r.status != 200)
      return rest_error{r.status, op, message_of(r.body)};
    int64_t total = 0;
    auto got = decode<std::vector<rest_runner>>(op, r.status, r.body, [&](od::value v, std::vector<rest_runner>& out) {
      fields(v, [&](std::string_view k, od::value x) {
        if (k == "total_count") {
          total = num(x);
        } else if (k == "runners") {
          json::items(x, [&](size_t, od::value item) {
            rest_runner rn;
            fields(item, [&](std::string_view k2, od::value y) {
              if (k2 == "id")
                rn.id = num(y);
              else if (k2 == "name")
                rn.name = str(y);
              else if (k2 == "status")
                rn.status = str(y);
              else if (k2 == "busy")
                rn.busy = !is_null(y) && bool(y.get_bool());
            });
            out.push_back(std::move(rn));
          });
        }
      });
    });
    if (auto* e = std::get_if<rest_error>(&got))
      return *e;
    auto& items = std::get<std::vector<rest_runner>>(got);
    all.insert(all.end(), items.begin(), items.end());
    if (items.empty() || static_cast<int64_t>(all.size()) >= total)
      break;
  }
  return all;
}

rest_result<runner_removal> rest_client::remove_runner(const std::string& scope, int64_t runner_id) {
  const std::string op = "remove runner " + std::to_string(runner_id) + " of " + scope;
  auto a = call(op, "DELETE", "/" + scope + "/actions/runners/" + std::to_string(runner_id));
  if (auto* e = std::get_if<rest_error>(&a))
    return *e;
  auto& r = std::get<answer>(a);
  if (r.status == 204)
    return runner_removal::removed;
  if (r.status == 404)
    return runner_removal::already_gone;
  if (r.status == 422)
    return runner_removal::busy;
  return rest_error{r.status, op, message_of(r.body)};
}

}  // namespace headroom::github
