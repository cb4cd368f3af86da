// RESP on top of hiredis' codec: commands are encoded with redisFormatCommandArgv (binary-safe
// argv/length pairs, never printf with user input) and replies parsed with redisReader.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct redisReader;

namespace redlock {

// A parsed reply, owned by value so that tests can build one by hand.
struct Reply {
  enum class Type { Nil, Status, Error, Integer, String, Array };

  Type type = Type::Nil;
  std::int64_t integer = 0;
  std::string str;  // Status, Error and String
  std::vector<Reply> elements;

  static Reply nil() { return Reply{}; }
  static Reply status(std::string s) { return Reply{Type::Status, 0, std::move(s), {}}; }
  static Reply error(std::string s) { return Reply{Type::Error, 0, std::move(s), {}}; }
  static Reply number(std::int64_t n) { return Reply{Type::Integer, n, {}, {}}; }
  static Reply string(std::string s) { return Reply{Type::String, 0, std::move(s), {}}; }
  static Reply array(std::vector<Reply> e) { return Reply{Type::Array, 0, {}, std::move(e)}; }

  bool is_error() const { return type == Type::Error; }
  // The integer of an Integer reply, or of a String that holds a decimal number.
  std::optional<std::int64_t> as_integer() const;
};

// Appends the RESP encoding of ARGV to OUT.
void encode_command(const std::vector<std::string>& argv, std::string& out);
// The same for the words of HEAD followed by those of ARGV ("EVALSHA", SHA1, then a request's
// own words), without copying them into one list first.
void encode_command(std::initializer_list<std::string_view> head, const std::vector<std::string>& argv,
                    std::string& out);

// Incremental reply parser.
class ReplyReader {
 public:
  ReplyReader();
  ~ReplyReader();
  ReplyReader(const ReplyReader&) = delete;
  ReplyReader& operator=(const ReplyReader&) = delete;

  void feed(const char* data, std::size_t len);
  // The next complete reply, nothing when more bytes are needed; throws std::runtime_error
  // when the stream is not RESP.
  std::optional<Reply> next();

 private:
  struct Free {
    void operator()(redisReader* r) const;
  };
  std::unique_ptr<redisReader, Free> reader_;
};

}  // namespace redlock
