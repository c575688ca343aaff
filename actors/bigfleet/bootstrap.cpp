// The bootstrap blob: a text template read once at start-up, rendered per BootstrapRequest. Like
// the reference operator's, a render error goes back in the response's `error` field (the shard
// records a shortfall) and headroom keeps running.
//
// Placeholders: {{cluster_id}}, {{request_id}}; the section {{#requirements}}…{{/requirements}}
// repeats for each requirement with {{key}}, {{operator}} and {{values}} (comma-separated).

#include "actors/bigfleet/bigfleet.hpp"

namespace headroom::actors::bigfleet {

namespace pb = ::bigfleet::v1alpha1;

namespace {

struct render_error {
  std::string message;
};

std::string op_name(pb::NodeSelectorRequirement::Operator op) {
  switch (op) {
    case pb::NodeSelectorRequirement::OPERATOR_IN: return "In";
    case pb::NodeSelectorRequirement::OPERATOR_NOT_IN: return "NotIn";
    case pb::NodeSelectorRequirement::OPERATOR_EXISTS: return "Exists";
    case pb::NodeSelectorRequirement::OPERATOR_DOES_NOT_EXIST: return "DoesNotExist";
    case pb::NodeSelectorRequirement::OPERATOR_SAME: return "Same";
    default: return "";
  }
}

// Renders `text` with `lookup` for plain placeholders and `section` for {{#name}}…{{/name}}.
template <class Lookup, class Section>
std::string render(std::string_view text, Lookup&& lookup, Section&& section) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    const auto open = text.find("{{", at);
    if (open == std::string_view::npos) {
      out.append(text.substr(at));
      break;
    }
    out.append(text.substr(at, open - at));
    const auto close = text.find("}}", open + 2);
    if (close == std::string_view::npos)
      throw render_error{"unclosed {{ at offset " + std::to_string(open)};
    std::string_view name = text.substr(open + 2, close - open - 2);
    while (!name.empty() && name.front() == ' ')
      name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ')
      name.remove_suffix(1);
    if (!name.empty() && name.front() == '#') {
      const std::string end = "{{/" + std::string{name.substr(1)} + "}}";
      const auto end_at = text.find(end, close + 2);
      if (end_at == std::string_view::npos)
        throw render_error{"section {{" + std::string{name} + "}} is never closed"};
      out += section(name.substr(1), text.substr(close + 2, end_at - close - 2));
      at = end_at + end.size();
      continue;
    }
    out += lookup(name);
    at = close + 2;
  }
  return out;
}

}  // namespace

pb::BootstrapBlobResponse render_bootstrap(const std::string& template_text, const std::string& cluster_id,
                                           const pb::BootstrapRequest& request) {
  pb::BootstrapBlobResponse out;
  out.set_request_id(request.request_id());
  out.set_ttl_seconds(3600);
  if (template_text.empty()) {
    out.set_user_data("#cloud-config\n# headroom: no bootstrap template configured (cluster " + cluster_id + ")\n");
    return out;
  }
  try {
    auto top = [&](std::string_view name) -> std::string {
      if (name == "cluster_id")
        return cluster_id;
      if (name == "request_id")
        return request.request_id();
      throw render_error{"unknown placeholder {{" + std::string{name} + "}}"};
    };
    auto section = [&](std::string_view name, std::string_view body) -> std::string {
      if (name != "requirements")
        throw render_error{"unknown section {{#" + std::string{name} + "}}"};
      std::string all;
      for (const auto& r : request.requirements()) {
        all += render(body,
                      [&](std::string_view field) -> std::string {
                        if (field == "key")
                          return r.key();
                        if (field == "operator")
                          return op_name(r.operator_());
                        if (field == "values") {
                          std::string v;
                          for (int i = 0; i < r.values_size(); ++i)
                            v += (i ? "," : "") + r.values(i);
                          return v;
                        }
                        return top(field);
                      },
                      [](std::string_view n, std::string_view) -> std::string {
                        throw render_error{"nested section {{#" + std::string{n} + "}}"};
                      });
      }
      return all;
    };
    out.set_user_data(render(template_text, top, section));
  } catch (const render_error& e) {
    out.clear_user_data();
    out.set_error("bootstrap template: " + e.message);
  }
  return out;
}

}  // namespace headroom::actors::bigfleet
