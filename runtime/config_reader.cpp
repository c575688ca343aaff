#include "runtime/config_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace headroom::runtime {

[[noreturn]] void config_fail(std::string path, std::string problem) {
  throw config_failure{config_error{std::move(path), std::move(problem)}};
}

namespace {


size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

thread_local config_schema* recording = nullptr;

// scaleSets[3].runner.tolerations[0] → scaleSets[].runner.tolerations[]
std::string schema_path(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    out += path[i];
    if (path[i] == '[') {
      while (i + 1 < path.size() && path[i + 1] != ']')
        ++i;
    }
  }
  return out;
}

void record(const std::string& path, config_key key) {
  if (recording != nullptr)
    recording->keys.insert_or_assign(schema_path(path), std::move(key));
}

std::string number_text(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

config_recording::config_recording(config_schema& into) : previous_(recording) { recording = &into; }
config_recording::~config_recording() { recording = previous_; }

void describe_config_key(const std::string& path, config_key key) { record(path, std::move(key)); }

std::string yaml_kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "null";
    default: return "undefined";
  }
}

config_section::config_section(const YAML::Node& node, std::string path, std::set<std::string> known)
      : node_(node), path_(std::move(path)) {
    if (recording != nullptr)
      recording->sections[schema_path(path_)].insert(known.begin(), known.end());
    if (!node_.IsMap())
      config_fail(path_.empty() ? "(top level)" : path_, "expected a mapping, found " + yaml_kind(node_));
    for (const auto& kv : node_) {
      const auto key = kv.first.as<std::string>();
      if (known.count(key) == 0) {
        std::string hint;
        size_t best = 3;
        for (const auto& k : known) {
          const size_t d = edit_distance(key, k);
          if (d < best) {
            best = d;
            hint = " (did you mean '" + k + "'?)";
          }
        }
        config_fail(join_path(path_, key), "unknown key" + hint);
      }
    }
  }

std::optional<YAML::Node> config_section::get(const std::string& key) const {
    YAML::Node child = node_[key];
    if (!child.IsDefined() || child.IsNull())
      return std::nullopt;
    return child;
  }
std::string config_section::path(const std::string& key) const { return join_path(path_, key); }

void config_section::read_uint(const std::string& key, uint32_t& out, uint32_t min, uint32_t max) const {
    record(path(key), {"integer", std::to_string(min), std::to_string(max), std::to_string(out)});
    auto child = get(key);
    if (!child)
      return;
    if (!child->IsScalar())
      config_fail(path(key), "expected an integer, found " + yaml_kind(*child));
    const auto text = child->Scalar();
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size())
      config_fail(path(key), "expected an integer, found '" + text + "'");
    if (value < min || value > max)
      config_fail(path(key), "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                          ", found " + text);
    out = static_cast<uint32_t>(value);
  }

void config_section::read_double(const std::string& key, double& out, double min, double max) const {
  record(path(key), {"number", min > -1e300 ? number_text(min) : "", max < 1e300 ? number_text(max) : "", number_text(out)});
  auto child = get(key);
  if (!child)
    return;
  if (!child->IsScalar())
    config_fail(path(key), "expected a number, found " + yaml_kind(*child));
  const auto text = child->Scalar();
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(value))
    config_fail(path(key), "expected a number, found '" + text + "'");
  if (value < min || value > max) {
    std::ostringstream range;
    range << "must be between " << min << " and " << max << ", found " << text;
    config_fail(path(key), range.str());
  }
  out = value;
}

void config_section::read_duration(const std::string& key, millis& out, millis min, millis max) const {
    record(path(key), {"duration", format_duration(min), format_duration(max), format_duration(out)});
    auto child = get(key);
    if (!child)
      return;
    if (!child->IsScalar())
      config_fail(path(key), "expected a duration such as 30s, found " + yaml_kind(*child));
    const auto text = child->Scalar();
    auto d = parse_duration(text);
    if (!d)
      config_fail(path(key), "expected a duration such as 100ms, 30s or 5m, found '" + text + "'");
    if (*d < min || *d > max)
      config_fail(path(key), "must be between " + format_duration(min) + " and " + format_duration(max) +
                          ", found " + text);
    out = *d;
  }

void config_section::read_bool(const std::string& key, bool& out) const {
    record(path(key), {"boolean", "", "", out ? "true" : "false"});
    auto child = get(key);
    if (!child)
      return;
    const auto text = child->IsScalar() ? child->Scalar() : yaml_kind(*child);
    if (text != "true" && text != "false")
      config_fail(path(key), "expected true or false, found '" + text + "'");
    out = text == "true";
  }

std::vector<std::string> config_section::read_strings(const std::string& key) const {
    record(path(key), {"strings", "", "", ""});
    auto child = get(key);
    if (!child)
      return {};
    if (!child->IsSequence())
      config_fail(path(key), "expected a list of strings, found " + yaml_kind(*child));
    std::vector<std::string> out;
    for (size_t i = 0; i < child->size(); ++i) {
      const auto item = (*child)[i];
      if (!item.IsScalar())
        config_fail(path(key) + "[" + std::to_string(i) + "]", "expected a string, found " + yaml_kind(item));
      out.push_back(item.Scalar());
    }
    return out;
  }

std::vector<std::pair<std::string, std::string>> config_section::read_string_map(const std::string& key) const {
    record(path(key), {"string-map", "", "", ""});
    auto child = get(key);
    if (!child)
      return {};
    if (!child->IsMap())
      config_fail(path(key), "expected a mapping of strings, found " + yaml_kind(*child));
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& kv : *child) {
      const auto k = kv.first.as<std::string>();
      if (!kv.second.IsScalar())
        config_fail(path(key) + "." + k, "expected a string, found " + yaml_kind(kv.second));
      out.emplace_back(k, kv.second.Scalar());
    }
    return out;
  }

std::optional<std::string> config_section::read_string(const std::string& key) const {
    record(path(key), {"string", "", "", ""});
    auto child = get(key);
    if (!child)
      return std::nullopt;
    if (!child->IsScalar())
      config_fail(path(key), "expected a string, found " + yaml_kind(*child));
    return child->Scalar();
  }



}  // namespace headroom::runtime
