#include "adapters/k8s/objects.hpp"

#include <algorithm>

namespace headroom::k8s {

namespace {
const std::string* find_pair(const string_pairs& pairs, std::string_view key) {
  for (const auto& [k, v] : pairs)
    if (k == key)
      return &v;
  return nullptr;
}
}  // namespace

const std::string* object_meta::label(std::string_view key) const { return find_pair(*labels, key); }
const std::string* object_meta::annotation(std::string_view key) const { return find_pair(*annotations, key); }

int64_t resource_list::get(std::string_view name) const {
  if (name == "cpu")
    return cpu_milli;
  if (name == "memory")
    return memory;
  if (name == "ephemeral-storage")
    return ephemeral_storage;
  if (name == "pods")
    return pods;
  for (const auto& [k, v] : extended)
    if (k == name)
      return v;
  return 0;
}

namespace {
int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
}  // namespace

void resource_list::add(std::string_view name, int64_t amount) {
  if (name == "cpu") {
    cpu_milli = sat_add(cpu_milli, amount);
  } else if (name == "memory") {
    memory = sat_add(memory, amount);
  } else if (name == "ephemeral-storage") {
    ephemeral_storage = sat_add(ephemeral_storage, amount);
  } else if (name == "pods") {
    pods = sat_add(pods, amount);
  } else {
    for (auto& [k, v] : extended)
      if (k == name) {
        v = sat_add(v, amount);
        return;
      }
    extended.emplace_back(std::string{name}, amount);
  }
}

// Field by field: the effective-requests arithmetic runs it several times per decoded Pod, and
// going through add() by name compared the names each time.
void resource_list::add_all(const resource_list& other) {
  cpu_milli = sat_add(cpu_milli, other.cpu_milli);
  memory = sat_add(memory, other.memory);
  ephemeral_storage = sat_add(ephemeral_storage, other.ephemeral_storage);
  pods = sat_add(pods, other.pods);
  for (const auto& [k, v] : other.extended)
    add(k, v);
}

void resource_list::max_with(const resource_list& other) {
  cpu_milli = std::max(cpu_milli, other.cpu_milli);
  memory = std::max(memory, other.memory);
  ephemeral_storage = std::max(ephemeral_storage, other.ephemeral_storage);
  pods = std::max(pods, other.pods);
  for (const auto& [k, v] : other.extended) {
    const int64_t mine = get(k);
    if (v > mine)
      add(k, v - mine);
  }
}

const condition* pod::find_condition(std::string_view type) const {
  for (const auto& c : *conditions)
    if (c.type == type)
      return &c;
  return nullptr;
}

}  // namespace headroom::k8s
