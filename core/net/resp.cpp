#include "core/net/resp.hpp"

#include <hiredis/hiredis.h>

#include <charconv>
#include <stdexcept>

namespace redlock {

namespace {

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

Reply convert(const redisReply& r) {
  switch (r.type) {
    case REDIS_REPLY_STRING:
      return Reply::string(std::string(r.str, r.len));
    case REDIS_REPLY_STATUS:
      return Reply::status(std::string(r.str, r.len));
    case REDIS_REPLY_ERROR:
      return Reply::error(std::string(r.str, r.len));
    case REDIS_REPLY_INTEGER:
      return Reply::number(r.integer);
    case REDIS_REPLY_ARRAY: {
      std::vector<Reply> elements;
      elements.reserve(r.elements);
      for (std::size_t i = 0; i < r.elements; ++i) elements.push_back(convert(*r.element[i]));
      return Reply::array(std::move(elements));
    }
    default:
      return Reply::nil();
  }
}

}  // namespace

std::optional<std::int64_t> Reply::as_integer() const {
  if (type == Type::Integer) return integer;
  if (type != Type::String) return std::nullopt;
  std::int64_t value = 0;
  auto res = std::from_chars(str.data(), str.data() + str.size(), value);
  if (str.empty() || res.ec != std::errc() || res.ptr != str.data() + str.size()) return std::nullopt;
  return value;
}

namespace {

// "<MARK><N>\r\n", as RESP writes an array's or a bulk string's length.
void append_length(std::string& out, char mark, std::size_t n) {
  char buf[24];
  buf[0] = mark;
  const auto end = std::to_chars(buf + 1, buf + sizeof buf - 2, n).ptr;
  end[0] = '\r';
  end[1] = '\n';
  out.append(buf, static_cast<std::size_t>(end + 2 - buf));
}

void append_bulk(std::string& out, std::string_view arg) {
  append_length(out, '$', arg.size());
  out.append(arg);
  out.append("\r\n", 2);
}

}  // namespace

// RESP's request form, written here: hiredis' redisFormatCommandArgv formats every length with
// sprintf, which cost more than the rest of a command's work.
void encode_command(const std::vector<std::string>& argv, std::string& out) {
  encode_command({}, argv, out);
}

void encode_command(std::initializer_list<std::string_view> head, const std::vector<std::string>& argv,
                    std::string& out) {
  std::size_t size = 16;
  for (std::string_view arg : head) size += arg.size() + 16;
  for (const auto& arg : argv) size += arg.size() + 16;
  out.reserve(out.size() + size);
  append_length(out, '*', head.size() + argv.size());
  for (std::string_view arg : head) append_bulk(out, arg);
  for (const auto& arg : argv) append_bulk(out, arg);
}

void ReplyReader::Free::operator()(redisReader* r) const {
  redisReaderFree(r);
}

ReplyReader::ReplyReader() : reader_(redisReaderCreate()) {
  if (!reader_) throw std::bad_alloc();
  // Lock replies are tiny; keep hiredis from holding on to a large idle buffer.
  reader_->maxbuf = 64 * 1024;
}

ReplyReader::~ReplyReader() = default;

void ReplyReader::feed(const char* data, std::size_t len) {
  if (redisReaderFeed(reader_.get(), data, len) != REDIS_OK) throw std::bad_alloc();
}

std::optional<Reply> ReplyReader::next() {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
    throw std::runtime_error(reader_->errstr[0] ? reader_->errstr : "protocol error");
  }
  if (raw == nullptr) return std::nullopt;
  ReplyPtr reply(static_cast<redisReply*>(raw));
  return convert(*reply);
}

}  // namespace redlock
