// The bootstrap blob: a text template read once at start-up, rendered per BootstrapRequest. Like
// the reference operator's, a render error goes back in the response's `error` field (the shard
// records a shortfall) and headroom keeps running.
//
// The template is Go text/template over the reference renderer's input, as its operator parses it
// (runtime/text_template.hpp): {{ .ClusterID }}, {{ range .Requirements }}{{ .Key }} {{ .Operator }}
// {{ .Values }}{{ end }}. headroom's older syntax still renders, with a warning at start-up:
// {{cluster_id}}, {{request_id}}; the section {{#requirements}}…{{/requirements}} repeats for each
// requirement with {{key}}, {{operator}} and {{values}} (comma-separated).

#include <algorithm>

#include "actors/bigfleet/bigfleet.hpp"
#include "runtime/text_template.hpp"

namespace headroom::actors::bigfleet {

namespace pb = ::bigfleet::v1alpha1;
namespace tt = runtime::text_template;

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

// The older syntax: every action a bare lower-case name, or a section's # or / and its name.
bool legacy_syntax(std::string_view text) {
  size_t at = 0, actions = 0;
  while ((at = text.find("{{", at)) != std::string_view::npos) {
    const auto close = text.find("}}", at + 2);
    if (close == std::string_view::npos)
      return false;
    std::string_view a = text.substr(at + 2, close - at - 2);
    while (!a.empty() && a.front() == ' ')
      a.remove_prefix(1);
    while (!a.empty() && a.back() == ' ')
      a.remove_suffix(1);
    if (!a.empty() && (a.front() == '#' || a.front() == '/'))
      a.remove_prefix(1);
    if (a.empty() || !std::all_of(a.begin(), a.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; }))
      return false;
    ++actions;
    at = close + 2;
  }
  return actions > 0;
}

std::string render_legacy(const std::string& template_text, const std::string& cluster_id, const pb::BootstrapRequest& request) {
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
  return render(template_text, top, section);
}

// The reference renderer's input (BootstrapRendererInput), its field and type names verbatim.
tt::value renderer_input(const std::string& cluster_id, const pb::BootstrapRequest& request) {
  tt::list requirements;
  for (const auto& r : request.requirements()) {
    tt::list values(r.values().begin(), r.values().end());
    requirements.push_back(tt::record{"operator.RequirementInput",
                                      {{"Key", r.key()}, {"Operator", op_name(r.operator_())}, {"Values", std::move(values)}}});
  }
  return tt::record{"operator.BootstrapRendererInput", {{"ClusterID", cluster_id}, {"Requirements", std::move(requirements)}}};
}

}  // namespace

std::variant<bootstrap_template, std::string> parse_bootstrap_template(std::string text) {
  bootstrap_template t;
  t.legacy = !text.empty() && legacy_syntax(text);
  if (!text.empty() && !t.legacy) {
    auto parsed = tt::parsed::parse(text, "bootstrap");
    if (auto* e = std::get_if<std::string>(&parsed))
      return std::move(*e);
    t.go = std::make_shared<const tt::parsed>(std::get<tt::parsed>(std::move(parsed)));
  }
  t.text = std::move(text);
  return t;
}

pb::BootstrapBlobResponse render_bootstrap(const bootstrap_template& t, const std::string& cluster_id,
                                           const pb::BootstrapRequest& request) {
  pb::BootstrapBlobResponse out;
  out.set_request_id(request.request_id());
  out.set_ttl_seconds(3600);
  if (t.text.empty()) {
    out.set_user_data("#cloud-config\n# headroom: no bootstrap template configured (cluster " + cluster_id + ")\n");
    return out;
  }
  if (t.go) {
    auto r = t.go->execute(renderer_input(cluster_id, request));
    if (r.error.empty())
      out.set_user_data(std::move(r.text));
    else
      out.set_error(std::move(r.error));
    return out;
  }
  try {
    out.set_user_data(render_legacy(t.text, cluster_id, request));
  } catch (const render_error& e) {
    out.clear_user_data();
    out.set_error("bootstrap template: " + e.message);
  }
  return out;
}

}  // namespace headroom::actors::bigfleet
