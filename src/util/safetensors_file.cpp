// .safetensors reader (see safetensors_file.hpp).
#include "util/safetensors_file.hpp"

#include <cstdint>  // std::uint64_t
#include <cstring>  // std::memcpy
#include <map>      // std::map

#include "util/error.hpp"  // UserError
#include "util/input_file.hpp"  // read_input_file

namespace trainer {
namespace {

// A JSON value of the subset safetensors headers use.
struct Json {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  double number_value = 0;
  std::string text;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;
};

class JsonReader {
 public:
  JsonReader(const std::string& text, const std::string& what) : t_(text), what_(what) {}
  Json document() {
    Json v = value(0);
    space();
    if (at_ != t_.size()) fail("text after the header's JSON");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw UserError("'" + what_ + "' is not a valid .safetensors file: " + why + " (header byte " +
                    std::to_string(at_) + ")");
  }
  void space() {
    while (at_ < t_.size() && (t_[at_] == ' ' || t_[at_] == '\n' || t_[at_] == '\r' || t_[at_] == '\t')) ++at_;
  }
  char peek() {
    space();
    if (at_ >= t_.size()) fail("the header ends early");
    return t_[at_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  Json value(int depth) {
    if (depth > 32) fail("nesting too deep");
    const char c = peek();
    Json v;
    if (c == '{') {
      v.kind = Json::object;
      ++at_;
      if (peek() == '}') return ++at_, v;
      for (;;) {
        std::string key = string_literal();
        expect(':');
        v.fields.emplace_back(std::move(key), value(depth + 1));
        if (peek() == ',') { ++at_; continue; }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::array;
      ++at_;
      if (peek() == ']') return ++at_, v;
      for (;;) {
        v.items.push_back(value(depth + 1));
        if (peek() == ',') { ++at_; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::string;
      v.text = string_literal();
      return v;
    }
    if (t_.compare(at_, 4, "null") == 0) return at_ += 4, v;
    if (t_.compare(at_, 4, "true") == 0) return at_ += 4, v.kind = Json::boolean, v.number_value = 1, v;
    if (t_.compare(at_, 5, "false") == 0) return at_ += 5, v.kind = Json::boolean, v;
    std::size_t used = 0;
    try {
      v.number_value = std::stod(t_.substr(at_, 32), &used);
    } catch (const std::exception&) {
      fail("an unexpected character");
    }
    at_ += used;
    v.kind = Json::number;
    return v;
  }
  std::string string_literal() {
    expect('"');
    std::string out;
    while (at_ < t_.size() && t_[at_] != '"') {
      if (t_[at_] == '\\') {
        if (++at_ >= t_.size()) break;
        const char e = t_[at_];
        if (e == 'u') fail("\\u escapes in names are not supported");
        out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
      } else {
        out.push_back(t_[at_]);
      }
      ++at_;
    }
    if (at_ >= t_.size()) fail("an unterminated string");
    ++at_;
    return out;
  }
  const std::string& t_;
  std::string what_;
  std::size_t at_ = 0;
};

const Json* field(const Json& object, const std::string& name) {
  for (const auto& [k, v] : object.fields)
    if (k == name) return &v;
  return nullptr;
}

StoredType type_of(const std::string& dtype, const std::string& what, const std::string& tensor) {
  static const std::map<std::string, StoredType> types = {{"F32", StoredType::f32}, {"F64", StoredType::f64},
                                                          {"F16", StoredType::f16}, {"BF16", StoredType::bf16},
                                                          {"I64", StoredType::i64}, {"I32", StoredType::i32}};
  const auto it = types.find(dtype);
  if (it == types.end())
    throw UserError("'" + what + "': tensor '" + tensor + "' has dtype " + dtype + ", which the trainer cannot load",
                    "save the weights as F32, F16 or BF16");
  return it->second;
}

}  // namespace

std::vector<StoredTensor> parse_safetensors(const std::string& bytes, const std::string& what) {
  if (bytes.size() < 8) throw UserError("'" + what + "' is too short for a .safetensors file");
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  if (header_size > bytes.size() - 8)
    throw UserError("'" + what + "' is not a .safetensors file (its header length " + std::to_string(header_size) +
                    " exceeds the file)", "is it truncated, or another format?");
  const std::string header = bytes.substr(8, header_size);
  const Json doc = JsonReader(header, what).document();
  if (doc.kind != Json::object) throw UserError("'" + what + "': the .safetensors header is not a JSON object");
  const std::size_t data_start = 8 + header_size;
  const std::uint64_t data_size = bytes.size() - data_start;
  std::vector<StoredTensor> out;
  for (const auto& [name, info] : doc.fields) {
    if (name == "__metadata__") continue;
    const Json* dtype = field(info, "dtype");
    const Json* shape = field(info, "shape");
    const Json* offsets = field(info, "data_offsets");
    if (info.kind != Json::object || !dtype || dtype->kind != Json::string || !shape || shape->kind != Json::array ||
        !offsets || offsets->kind != Json::array || offsets->items.size() != 2)
      throw UserError("'" + what + "': the header entry of '" + name + "' lacks dtype, shape or data_offsets");
    StoredTensor t;
    t.name = name;
    t.type = type_of(dtype->text, what, name);
    std::uint64_t count = 1;
    for (const auto& d : shape->items) {
      if (d.kind != Json::number || d.number_value < 0 || d.number_value > 1e15)
        throw UserError("'" + what + "': tensor '" + name + "' has a bad shape");
      t.shape.push_back(std::int64_t(d.number_value));
      count *= std::uint64_t(d.number_value);
      if (count > data_size) throw UserError("'" + what + "': tensor '" + name + "' is larger than the file");
    }
    const double begin = offsets->items[0].number_value, end = offsets->items[1].number_value;
    if (begin < 0 || end < begin || end > double(data_size) ||
        std::uint64_t(end - begin) != count * bytes_per_element(t.type))
      throw UserError("'" + what + "': tensor '" + name + "' has data offsets that do not fit its shape or the file",
                      "the file is truncated or corrupt");
    t.bytes = bytes.substr(data_start + std::size_t(begin), std::size_t(end - begin));
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<StoredTensor> read_safetensors(const std::string& path) {
  // At most 16 GiB: larger than any backbone's weights, smaller than what would not fit.
  return parse_safetensors(read_input_file(path, "cannot open weights file '" + path + "'", std::size_t{16} << 30), path);
}

}  // namespace trainer
