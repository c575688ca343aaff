#include "adapters/k8s/queue.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <simdjson.h>

#include <cctype>

#include "adapters/k8s/quantity.hpp"
#include "runtime/log.hpp"

namespace headroom::k8s {

namespace {

namespace dom = simdjson::dom;

struct bad_field {
  std::string message;
};

}  // namespace

std::optional<std::chrono::milliseconds> parse_go_duration(std::string_view text) {
  if (text.empty())
    return std::nullopt;
  if (text == "0")
    return std::chrono::milliseconds{0};
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (i == start)
      return std::nullopt;
    double value = 0;
    try {
      value = std::stod(std::string{text.substr(start, i - start)});
    } catch (const std::exception&) {
      return std::nullopt;
    }
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i])))
      ++i;
    const auto unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "h")
      scale = 3'600'000;
    else if (unit == "m")
      scale = 60'000;
    else if (unit == "s")
      scale = 1'000;
    else if (unit == "ms")
      scale = 1;
    else
      return std::nullopt;
    total_ms += value * scale;
    if (total_ms > 1e15)
      return std::nullopt;
  }
  return std::chrono::milliseconds{static_cast<int64_t>(total_ms)};
}

std::string format_amount(std::string_view resource, int64_t amount) {
  if (resource == "cpu")
    return amount % 1000 == 0 ? std::to_string(amount / 1000) : std::to_string(amount) + "m";
  return std::to_string(amount);
}

decoded<queue> decode_queue(std::string_view json) {
  thread_local dom::parser parser;
  dom::element root;
  queue q;
  auto where = [&q](const std::string& field) { return "Queue " + (q.name.empty() ? std::string{"?"} : q.name) + ": " + field; };
  if (auto e = parser.parse(json.data(), json.size()).get(root); e != simdjson::SUCCESS)
    return decode_error{std::string{"Queue: not JSON ("} + simdjson::error_message(e) + ")"};
  try {
    std::string_view s;
    if (root["metadata"]["name"].get(s) == simdjson::SUCCESS)
      q.name = std::string{s};
    if (root["metadata"]["uid"].get(s) == simdjson::SUCCESS)
      q.uid = std::string{s};
    if (root["metadata"]["resourceVersion"].get(s) == simdjson::SUCCESS)
      q.resource_version = std::string{s};
    int64_t gen = 0;
    if (root["metadata"]["generation"].get(gen) == simdjson::SUCCESS)
      q.generation = gen;
    dom::object spec;
    if (root["spec"].get(spec) != simdjson::SUCCESS)
      throw bad_field{where("spec: required, an object")};
    dom::object cap;
    if (spec["capacity"].get(cap) != simdjson::SUCCESS)
      throw bad_field{where("spec.capacity: required, a mapping of resource to quantity")};
    for (auto [key, value] : cap) {
      const std::string name{key};
      std::string text;
      if (value.is_string())
        text = std::string{std::string_view{value.get_string()}};
      else if (value.is_int64() || value.is_uint64())
        text = std::string{simdjson::to_string(value)};
      else
        throw bad_field{where("spec.capacity[" + name + "]: expected a quantity")};
      auto parsed = parse_quantity(text);
      if (auto* e = std::get_if<quantity_error>(&parsed))
        throw bad_field{where("spec.capacity[" + name + "]: " + e->message)};
      const auto& qv = std::get<quantity>(parsed);
      const int64_t amount = name == "cpu" ? qv.milli : qv.units;
      if (amount < 0)
        throw bad_field{where("spec.capacity[" + name + "]: negative")};
      q.capacity.emplace_back(name, amount);
    }
    if (spec["reservationTimeout"].get(s) == simdjson::SUCCESS) {
      auto d = parse_go_duration(s);
      if (!d)
        throw bad_field{where("spec.reservationTimeout: expected a duration such as 10m, found '" + std::string{s} + "'")};
      q.reservation_timeout = d;
    }
    if (spec["queueingStrategy"].get(s) == simdjson::SUCCESS) {
      if (s == "StrictFIFO")
        q.strict_fifo = true;
      else if (s != "BestEffortFIFO")
        throw bad_field{where("spec.queueingStrategy: expected BestEffortFIFO or StrictFIFO, found '" + std::string{s} + "'")};
    }
  } catch (const bad_field& b) {
    return decode_error{b.message};
  } catch (const simdjson::simdjson_error& e) {
    return decode_error{where(std::string{"malformed ("} + e.what() + ")")};
  }
  return q;
}

std::string encode_queue_status_patch(const queue_status& s) {
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w{out};
  auto text = [&w](const std::string& v) { w.String(v.data(), static_cast<rapidjson::SizeType>(v.size())); };
  auto amounts = [&](const char* key, const resource_amounts& a) {
    w.Key(key);
    w.StartObject();
    for (const auto& [name, amount] : a) {
      text(name);
      text(format_amount(name, amount));
    }
    w.EndObject();
  };
  // The whole status at once (JSON Patch `add` replaces it), so a resource that went away disappears.
  w.StartArray();
  w.StartObject();
  w.Key("op");
  w.String("add");
  w.Key("path");
  w.String("/status");
  w.Key("value");
  w.StartObject();
  amounts("allocated", s.allocated);
  amounts("reserved", s.reserved);
  amounts("waiting", s.waiting);
  w.Key("admittedPods");
  w.Int64(s.admitted_pods);
  w.Key("reservedPods");
  w.Int64(s.reserved_pods);
  w.Key("gatedPods");
  w.Int64(s.gated_pods);
  w.Key("observedGeneration");
  w.Int64(s.observed_generation);
  w.Key("conditions");
  w.StartArray();
  w.StartObject();
  w.Key("type");
  w.String("Active");
  w.Key("status");
  w.String(s.active ? "True" : "False");
  w.Key("observedGeneration");
  w.Int64(s.observed_generation);
  w.Key("lastTransitionTime");
  text(s.active_since);
  w.Key("reason");
  text(s.active_reason);
  w.Key("message");
  text(s.active_message);
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  w.EndArray();
  return out.GetString();
}

}  // namespace headroom::k8s
