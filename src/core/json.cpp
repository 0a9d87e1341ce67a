// zizq core: JSON parsing (recursive descent), serialization in jsonb text
// style, and the Value helpers declared in json.hpp.
#include "core/json.hpp"

#include "core/error.hpp"

namespace zizq::core::json {

namespace {

constexpr int kMaxDepth = 100;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Value document() {
    Value v = value(0);
    skip_space();
    if (!at_end()) fail("unexpected text after the value");
    return v;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;

  [[noreturn]] void fail(const std::string &what) const { fail_at(what, pos_); }
  [[noreturn]] void fail_at(const std::string &what, size_t offset) const {
    invalid("malformed JSON: " + what + " at offset " + std::to_string(offset));
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool looking_at(std::string_view s) const { return text_.substr(pos_).substr(0, s.size()) == s; }

  bool consume(char c) {
    if (at_end() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  Value value(int depth) {
    skip_space();
    if (at_end()) fail("unexpected end of input");
    char c = peek();
    if (c == '{') return object(depth + 1);
    if (c == '[') return array(depth + 1);
    if (c == '"') return Value::string(string());
    if (c == '-' || is_digit(c)) return number();
    if (take_word("true")) return Value::boolean_(true);
    if (take_word("false")) return Value::boolean_(false);
    if (take_word("null")) return Value::null();
    fail("unexpected character");
  }

  bool take_word(std::string_view word) {
    if (!looking_at(word)) return false;
    pos_ += word.size();
    return true;
  }

  void enter(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
    ++pos_;  // the opening bracket
    skip_space();
  }

  Value object(int depth) {
    enter(depth);
    Value obj = Value::object();
    if (consume('}')) return obj;
    do {
      skip_space();
      if (peek() != '"') fail("expected a string key");
      std::string key = string();
      skip_space();
      if (!consume(':')) fail("expected ':'");
      obj.set(std::move(key), value(depth));
      skip_space();
    } while (consume(','));
    if (!consume('}')) fail("expected ',' or '}'");
    return obj;
  }

  Value array(int depth) {
    enter(depth);
    Value arr = Value::array();
    if (consume(']')) return arr;
    do {
      arr.items.push_back(value(depth));
      skip_space();
    } while (consume(','));
    if (!consume(']')) fail("expected ',' or ']'");
    return arr;
  }

  // Grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
  Value number() {
    size_t start = pos_;
    consume('-');
    if (consume('0')) {
      if (is_digit(peek())) fail("leading zero in number");
    } else if (!digits()) {
      fail("expected a digit");
    }
    if (consume('.') && !digits()) fail("expected a digit after '.'");
    if (consume('e') || consume('E')) {
      if (!consume('+')) consume('-');
      if (!digits()) fail("expected a digit in exponent");
    }
    Value v;
    v.type = Type::Number;
    v.text = std::string(text_.substr(start, pos_ - start));
    return v;
  }

  bool digits() {
    size_t start = pos_;
    while (is_digit(peek())) ++pos_;
    return pos_ > start;
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated string");
      char c = text_[pos_];
      if (c == '"') break;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c == '\\') {
        escape(out);
      } else {
        out += c;
        ++pos_;
      }
    }
    ++pos_;
    return out;
  }

  void escape(std::string &out) {
    size_t start = pos_;
    ++pos_;  // the backslash
    if (at_end()) fail("unterminated string");
    char c = text_[pos_++];
    switch (c) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': append_utf8(out, code_point(start)); break;
      default: fail_at("invalid escape", start);
    }
  }

  // After "\u": one code point, joining a UTF-16 surrogate pair; a surrogate
  // on its own has no UTF-8 encoding, so it is refused.
  uint32_t code_point(size_t start) {
    uint32_t cp = hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF) fail_at("lone low surrogate", start);
    if (cp < 0xD800 || cp > 0xDBFF) return cp;
    if (!take_word("\\u")) fail_at("lone high surrogate", start);
    uint32_t low = hex4();
    if (low < 0xDC00 || low > 0xDFFF) fail_at("lone high surrogate", start);
    return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  }

  uint32_t hex4() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      int d = at_end() ? -1 : hex_digit(text_[pos_]);
      if (d < 0) fail("expected four hex digits in \\u escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }
};

// A number literal as value = sign * digits * 10^exponent, with the digit
// string normalized (no leading or trailing zeros) so integrality and
// magnitude can be read off without floating point.
struct Decimal {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;
};

// Saturates: any exponent past the cap is far outside int64 range anyway.
int64_t parse_exponent(std::string_view s) {
  constexpr int64_t kCap = int64_t{1} << 40;
  bool negative = !s.empty() && s[0] == '-';
  int64_t e = 0;
  for (char c : s)
    if (is_digit(c) && e < kCap) e = e * 10 + (c - '0');
  return negative ? -e : e;
}

Decimal decompose(std::string_view literal) {
  Decimal d;
  size_t i = 0;
  if (i < literal.size() && literal[i] == '-') {
    d.negative = true;
    ++i;
  }
  int64_t fraction_digits = 0;
  bool in_fraction = false;
  for (; i < literal.size() && literal[i] != 'e' && literal[i] != 'E'; ++i) {
    if (literal[i] == '.') {
      in_fraction = true;
      continue;
    }
    d.digits += literal[i];
    if (in_fraction) ++fraction_digits;
  }
  d.exponent = (i < literal.size() ? parse_exponent(literal.substr(i + 1)) : 0) - fraction_digits;
  size_t first = d.digits.find_first_not_of('0');
  d.digits.erase(0, first == std::string::npos ? d.digits.size() : first);
  while (!d.digits.empty() && d.digits.back() == '0') {
    d.digits.pop_back();
    ++d.exponent;
  }
  return d;
}

bool decimal_to_int64(const Decimal &d, int64_t *out) {
  if (d.digits.empty()) {  // zero, however written
    if (out) *out = 0;
    return true;
  }
  // digits has no trailing zeros, so a negative exponent means a fraction.
  if (d.exponent < 0 || static_cast<int64_t>(d.digits.size()) + d.exponent > 19) return false;
  uint64_t magnitude = 0;  // at most 19 digits: cannot overflow uint64
  for (char c : d.digits) magnitude = magnitude * 10 + static_cast<uint64_t>(c - '0');
  for (int64_t i = 0; i < d.exponent; ++i) magnitude *= 10;
  const uint64_t limit = uint64_t{INT64_MAX} + (d.negative ? 1 : 0);
  if (magnitude > limit) return false;
  if (out) *out = d.negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  return true;
}

void write(const Value &v, std::string &out);

void write_string(std::string_view s, std::string &out) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += kHex[(c >> 4) & 0xF];
          out += kHex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void write_array(const Value &v, std::string &out) {
  out += '[';
  for (size_t i = 0; i < v.items.size(); ++i) {
    if (i > 0) out += ", ";
    write(v.items[i], out);
  }
  out += ']';
}

void write_object(const Value &v, std::string &out) {
  out += '{';
  for (size_t i = 0; i < v.members.size(); ++i) {
    if (i > 0) out += ", ";
    write_string(v.members[i].first, out);
    out += ": ";
    write(v.members[i].second, out);
  }
  out += '}';
}

void write(const Value &v, std::string &out) {
  switch (v.type) {
    case Type::Null: out += "null"; break;
    case Type::Bool: out += v.boolean ? "true" : "false"; break;
    case Type::Number: out += v.text; break;
    case Type::String: write_string(v.text, out); break;
    case Type::Array: write_array(v, out); break;
    case Type::Object: write_object(v, out); break;
  }
}

}  // namespace

Value Value::boolean_(bool b) {
  Value v;
  v.type = Type::Bool;
  v.boolean = b;
  return v;
}

// Validated because the literal is written out verbatim by serialize().
Value Value::number(std::string literal) {
  Value v = parse(literal);
  if (!v.is_number()) invalid("not a JSON number: " + literal);
  return v;
}

Value Value::number(int64_t n) {
  Value v;
  v.type = Type::Number;
  v.text = std::to_string(n);
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.type = Type::String;
  v.text = std::move(s);
  return v;
}

Value Value::array() {
  Value v;
  v.type = Type::Array;
  return v;
}

Value Value::object() {
  Value v;
  v.type = Type::Object;
  return v;
}

const Value *Value::find(std::string_view key) const {
  for (const auto &member : members)
    if (member.first == key) return &member.second;
  return nullptr;
}

Value *Value::find(std::string_view key) {
  return const_cast<Value *>(static_cast<const Value *>(this)->find(key));
}

void Value::set(std::string key, Value v) {
  if (!is_object())
    throw Error(Sqlstate::InternalError, std::string("json: set() on a ") + type_name());
  if (Value *existing = find(key)) {
    *existing = std::move(v);
  } else {
    members.emplace_back(std::move(key), std::move(v));
  }
}

bool Value::erase(std::string_view key) {
  for (auto it = members.begin(); it != members.end(); ++it) {
    if (it->first == key) {
      members.erase(it);
      return true;
    }
  }
  return false;
}

bool Value::integral(int64_t *out) const {
  return is_number() && decimal_to_int64(decompose(text), out);
}

const char *Value::type_name() const {
  switch (type) {
    case Type::Null: return "null";
    case Type::Bool: return "boolean";
    case Type::Number: return "number";
    case Type::String: return "string";
    case Type::Array: return "array";
    case Type::Object: return "object";
  }
  return "unknown";
}

Value parse(std::string_view text) { return Parser(text).document(); }

std::string serialize(const Value &v) {
  std::string out;
  write(v, out);
  return out;
}

}  // namespace zizq::core::json
