#include "enclosing.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/util/error.hpp"
#include "environment.hpp"
#include "output.hpp"

namespace redlock::cli {

namespace {

std::string env_text(const char* name) {
  const char* v = environment_variable(name);
  return v ? v : "";
}

std::optional<std::int64_t> fence_value(const std::string& text) {
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') return std::nullopt;
  return v;
}

// REDLOCK_SERVERS as a signature; empty (not known) when it is unset or does not parse.
std::string signature_of_list(const std::string& list) {
  try {
    std::vector<ServerUrl> servers;
    for (const auto& text : split_server_list(list)) servers.push_back(parse_server_url(text));
    return servers.empty() ? "" : servers_signature(servers);
  } catch (const Error&) {
    return "";
  }
}

// The runs around this one, as their child was told (a malformed value names none).
std::vector<EnclosingLock> outer_locks() {
  std::vector<EnclosingLock> locks;
  // Outside any run there is nothing to parse, and a parse of nothing builds its error message
  // even when no exception is thrown.
  const std::string text = env_text("REDLOCK_ENCLOSING");
  if (text.empty()) return locks;
  Json list = Json::parse(text, nullptr, false);
  if (!list.is_array()) return locks;
  for (const auto& j : list) {
    if (!j.is_object() || !j.value("key", Json()).is_string() || !j.value("token", Json()).is_string()) continue;
    const Json servers = j.value("servers", Json());
    EnclosingLock lock{j["key"], j["token"], std::nullopt, servers.is_string() ? servers.get<std::string>() : "",
                       j.value("semaphore", Json()).is_boolean() && j["semaphore"].get<bool>()};
    if (j.value("fence", Json()).is_number_integer()) lock.fence = j["fence"].get<std::int64_t>();
    locks.push_back(std::move(lock));
  }
  return locks;
}

}  // namespace

std::vector<EnclosingLock> enclosing_locks() {
  std::vector<EnclosingLock> locks;
  EnclosingLock own{env_text("REDLOCK_KEY"), env_text("REDLOCK_TOKEN"), fence_value(env_text("REDLOCK_FENCE")),
                    signature_of_list(env_text("REDLOCK_SERVERS")), !env_text("REDLOCK_SLOT").empty()};
  if (!own.key.empty() && !own.token.empty()) locks.push_back(std::move(own));
  for (auto& outer : outer_locks()) locks.push_back(std::move(outer));
  return locks;
}

std::string servers_signature(const std::vector<ServerUrl>& servers) {
  std::vector<std::string> addresses;
  for (const auto& s : servers) addresses.push_back(s.address() + "/" + std::to_string(s.db));
  std::sort(addresses.begin(), addresses.end());
  std::string signature;
  for (const auto& a : addresses) signature += (signature.empty() ? "" : " ") + a;
  return signature;
}

const EnclosingLock* find_enclosing(const std::vector<EnclosingLock>& locks, const std::string& key,
                                    const std::string& servers, bool semaphore) {
  for (const auto& lock : locks) {
    if (lock.key == key && lock.semaphore == semaphore && (lock.servers.empty() || lock.servers == servers))
      return &lock;
  }
  return nullptr;
}

std::string enclosing_text(const std::vector<EnclosingLock>& locks) {
  Json list = Json::array();
  for (const auto& lock : locks) {
    Json j = {{"key", lock.key}, {"token", lock.token}, {"servers", lock.servers}};
    j["fence"] = lock.fence ? Json(*lock.fence) : Json(nullptr);
    if (lock.semaphore) j["semaphore"] = true;
    list.push_back(std::move(j));
  }
  return json_text(list);
}

}  // namespace redlock::cli
