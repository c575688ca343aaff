// Decode throughput of a 10k-pod list and of a watch stream, and bytes per cached Pod.
// The pods are the fixture captured from the real apiserver (kubectl's last-applied annotation
// removed, as controller-created pods do not carry it), minified as the apiserver sends it, with
// a distinct name, uid and resourceVersion each, as pods made from one template have. The
// `unique_labels` variants also give every pod its own label value, so that its labels (and its
// label index entry) are its own and cannot be shared.
//
// With --write-corpus DIR the generated list and watch stream are written for the client-go peer
// (tests/peers/clientgo-decode), so both sides decode the same bytes.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <simdjson.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "adapters/k8s/decode.hpp"
#include "adapters/k8s/events.hpp"
#include "adapters/k8s/time.hpp"
#include "adapters/k8s/object_cache.hpp"

namespace {

using headroom::k8s::pod;

std::string minify(const std::string& json) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\') {
        out.push_back(json[++i]);
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
      out.push_back(c);
    } else if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
      out.push_back(c);
    }
  }
  return out;
}

std::string pod_template() {
  std::ifstream in{std::string{HEADROOM_FIXTURES} + "/pod_full.json"};
  std::stringstream s;
  s << in.rdbuf();
  std::string json = minify(s.str());
  const std::string key = "\"kubectl.kubernetes.io/last-applied-configuration\":";
  auto start = json.find(key);
  if (start != std::string::npos) {
    auto end = start + key.size() + 1;  // past the opening quote
    while (json[end] != '"')
      end += json[end] == '\\' ? 2 : 1;
    json.erase(start, end + 2 - start);  // the value, its closing quote and the comma
  }
  return json;
}

std::string make_pod(const std::string& tmpl, int i, bool unique_label) {
  std::string p = tmpl;
  const std::string name = "workflow-placeholder-7";
  const auto at = p.find("\"name\":\"" + name + "\"");
  p.replace(at, name.size() + 9, "\"name\":\"runner-" + std::to_string(i) + "\"");
  const auto uid = p.find("\"uid\":\"");
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-0000-4000-8000-%012x", i, i * 7919);
  p.replace(uid + 7, 36, buf);
  const std::string rv = "\"resourceVersion\":\"223\"";
  p.replace(p.find(rv), rv.size(), "\"resourceVersion\":\"" + std::to_string(100'000 + i) + "\"");
  if (unique_label) {
    const std::string slot = "\"headroom.dev/slot\":\"7\"";
    p.replace(p.find(slot), slot.size(), "\"headroom.dev/slot\":\"" + std::to_string(i) + "\"");
  }
  return p;
}

struct corpus {
  std::string list;
  std::string watch;  // newline-delimited MODIFIED events
  std::vector<std::string> pods;
};

const corpus& data(int n = 10'000, bool unique_labels = false) {
  static std::map<std::pair<int, bool>, std::unique_ptr<corpus>> cache;
  auto& c = cache[{n, unique_labels}];
  if (!c) {
    c = std::make_unique<corpus>();
    const auto tmpl = pod_template();
    c->list = R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"100000"},"items":[)";
    for (int i = 0; i < n; ++i) {
      c->pods.push_back(make_pod(tmpl, i, unique_labels));
      c->list += (i ? "," : "") + c->pods.back();
      c->watch += R"({"type":"MODIFIED","object":)" + c->pods.back() + "}\n";
    }
    c->list += "]}";
  }
  return *c;
}

// The list is decoded where it is, as the informer decodes a page: from the response body's own
// string, grown once by simdjson's padding (the first iteration), not copied.
void decode_pod_list_10k(benchmark::State& state) {
  const auto& c = data();
  std::string body = c.list;
  for (auto _ : state) {
    auto r = headroom::k8s::decode_list<pod>(body);
    benchmark::DoNotOptimize(r);
    if (!std::holds_alternative<headroom::k8s::list_result<pod>>(r) ||
        std::get<headroom::k8s::list_result<pod>>(r).items.size() != 10'000)
      state.SkipWithError("decode failed");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * c.list.size()));
  state.counters["pods/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 10'000, benchmark::Counter::kIsRate);
}
BENCHMARK(decode_pod_list_10k)->Unit(benchmark::kMillisecond);

void decode_watch_stream_10k(benchmark::State& state) {
  const auto& c = data();
  for (auto _ : state) {
    size_t start = 0;
    size_t n = 0;
    while (start < c.watch.size()) {
      const auto end = c.watch.find('\n', start);
      auto r = headroom::k8s::decode_watch_event<pod>(std::string_view{c.watch}.substr(start, end - start));
      benchmark::DoNotOptimize(r);
      n += std::holds_alternative<headroom::k8s::watch_event<pod>>(r);
      start = end + 1;
    }
    if (n != 10'000)
      state.SkipWithError("decode failed");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * c.watch.size()));
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 10'000, benchmark::Counter::kIsRate);
}
BENCHMARK(decode_watch_stream_10k)->Unit(benchmark::kMillisecond);

// Heap bytes per Pod held in the informer's store (adapters/k8s/object_cache.hpp): the objects keyed
// namespace/name, with (args) indexes = 0 none, 1 the store's general indexes (namespace, every
// label, owner), 2 the one index headroom's pod informer holds (a label router's: one label's
// values). client-go's side holds a cache.Store without indexes. Everything the pods hold
// is counted, shared parts included: the interned values are made during the measurement.
void bytes_per_cached_pod(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto indexes = state.range(1);
  const bool unique_labels = state.range(2) != 0;
  const auto& c = data(n, unique_labels);
  double per_pod = 0;
  for (auto _ : state) {
    const auto before = mallinfo2().uordblks;
    {
      headroom::k8s::store<pod> store;
      if (indexes == 1)
        store.add_default_indexes();
      else if (indexes == 2)
        store.add_label_index("label:headroom.dev/role", "headroom.dev/role");
      for (const auto& json : c.pods) {
        auto r = headroom::k8s::decode_pod(json);
        store.put(std::make_shared<const pod>(std::move(std::get<pod>(r))));
      }
      const auto after = mallinfo2().uordblks;
      per_pod = static_cast<double>(after - before) / n;
      benchmark::DoNotOptimize(store);
    }
  }
  state.counters["bytes_per_pod"] = per_pod;
  state.counters["json_bytes_per_pod"] = static_cast<double>(c.pods.front().size());
}
BENCHMARK(bytes_per_cached_pod)
    ->ArgNames({"pods", "indexes", "unique_labels"})
    ->Args({10'000, 0, 0})
    ->Args({100'000, 0, 0})
    ->Args({10'000, 1, 0})
    ->Args({100'000, 1, 0})
    ->Args({100'000, 2, 0})
    ->Args({10'000, 0, 1})
    ->Args({10'000, 1, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// The floor under any On-Demand decoder of these pods: visit every key and every value of each
// watch event, copying nothing. A decoder that reads what headroom needs skips some values, but
// it cannot go much faster than this unless it skips most of the object.
size_t visit(simdjson::ondemand::value v) {
  namespace od = simdjson::ondemand;
  size_t n = 0;
  switch (v.type()) {
    case od::json_type::object:
      for (auto field : v.get_object()) {
        n += std::string_view{field.unescaped_key()}.size();
        n += visit(field.value());
      }
      break;
    case od::json_type::array:
      for (auto element : v.get_array())
        n += visit(element.value());
      break;
    case od::json_type::string:
      n += std::string_view{v.get_string()}.size();
      break;
    default:
      n += v.raw_json_token().size();
  }
  return n;
}

void ondemand_visit_everything_10k(benchmark::State& state) {
  const auto& c = data();
  simdjson::ondemand::parser parser;
  std::string buffer;
  for (auto _ : state) {
    size_t start = 0;
    size_t n = 0;
    while (start < c.watch.size()) {
      const auto end = c.watch.find('\n', start);
      buffer.assign(c.watch, start, end - start);
      const size_t size = buffer.size();
      buffer.resize(size + simdjson::SIMDJSON_PADDING);
      auto doc = parser.iterate(simdjson::padded_string_view{buffer.data(), size, buffer.size()});
      n += visit(doc.get_value());
      start = end + 1;
    }
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * c.watch.size()));
}
BENCHMARK(ondemand_visit_everything_10k)->Unit(benchmark::kMillisecond);

// ---- the encode side -------------------------------------------------------------------------
// Events as headroom writes them (adapters/k8s/events.cpp, through runtime::json_writer), and the
// string-concatenating encoder it replaced, kept here as the baseline of the same run.

std::string concat_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
  return out;
}

// At most `limit` bytes, cut on a UTF-8 character boundary (as events.cpp does).
std::string cut(std::string_view s, size_t limit) {
  if (s.size() <= limit)
    return std::string{s};
  size_t n = limit;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80)
    --n;
  return std::string{s.substr(0, n)};
}

// The encoder as it was before runtime::json_writer, line for line.
std::string concat_event(const headroom::k8s::event_record& e, std::string_view name, double event_time,
                         std::string_view controller, std::string_view instance) {
  const auto& r = e.regarding;
  std::string regarding = "{\"apiVersion\":" + concat_escape(r.api_version) + ",\"kind\":" + concat_escape(r.kind) +
                          ",\"name\":" + concat_escape(r.name);
  if (!r.ns.empty())
    regarding += ",\"namespace\":" + concat_escape(r.ns);
  if (!r.uid.empty())
    regarding += ",\"uid\":" + concat_escape(r.uid);
  regarding += "}";
  return "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":" + concat_escape(name) +
         ",\"namespace\":" + concat_escape(headroom::k8s::event_namespace(r)) + "},\"eventTime\":\"" +
         headroom::k8s::format_rfc3339(event_time, 6) + "\",\"reportingController\":" + concat_escape(cut(controller, 128)) +
         ",\"reportingInstance\":" + concat_escape(cut(instance, 128)) + ",\"action\":" + concat_escape(cut(e.action, 128)) +
         ",\"reason\":" + concat_escape(cut(e.reason, 128)) + ",\"note\":" + concat_escape(cut(e.note, 1024)) +
         ",\"type\":" + concat_escape(e.type) + ",\"regarding\":" + regarding + "}";
}

std::vector<headroom::k8s::event_record> event_records() {
  std::vector<headroom::k8s::event_record> out;
  for (int i = 0; i < 10'000; ++i) {
    headroom::k8s::event_record e;
    e.regarding = {"v1", "Pod", "ci", "runner-" + std::to_string(i), "0000-4000-8000-" + std::to_string(i * 7919)};
    e.type = i % 10 ? "Normal" : "Warning";
    e.reason = "PairPlaced";
    e.action = "Place";
    e.note = "pair " + std::to_string(i) + " placed on node \"kwok-" + std::to_string(i % 50) + "\" after 1.2 s\n(ladder rung 2)";
    out.push_back(std::move(e));
  }
  return out;
}

void encode_event_10k(benchmark::State& state) {
  const auto records = event_records();
  size_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    for (const auto& e : records) {
      auto json = headroom::k8s::encode_event(e, e.regarding.name + ".1", 1.7e9, "headroom.dev/capacity", "headroom-0");
      bytes += json.size();
      benchmark::DoNotOptimize(json);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 10'000, benchmark::Counter::kIsRate);
}
BENCHMARK(encode_event_10k)->Unit(benchmark::kMillisecond);

void encode_event_10k_concatenated(benchmark::State& state) {
  const auto records = event_records();
  size_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    for (const auto& e : records) {
      auto json = concat_event(e, e.regarding.name + ".1", 1.7e9, "headroom.dev/capacity", "headroom-0");
      bytes += json.size();
      benchmark::DoNotOptimize(json);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 10'000, benchmark::Counter::kIsRate);
}
BENCHMARK(encode_event_10k_concatenated)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--write-corpus") == 0) {
      const std::string dir = argv[i + 1];
      std::ofstream{dir + "/pods-10k.json"} << data().list;
      std::ofstream{dir + "/watch-10k.jsonl"} << data().watch;
      return 0;
    }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
