// A minimal unpickler for torch.save's state dicts (see torch_file.hpp). Pickle is a
// small stack machine; only the opcodes of protocols 2-4 that torch.save and Python's
// pickle emit for dicts, tuples, lists, numbers, strings and objects are handled, and
// an object of an unknown class is kept as an opaque value instead of being built.
#include "util/torch_file.hpp"

#include <cstdint>  // std::int64_t
#include <cstring>  // std::memcpy
#include <map>      // std::map
#include <memory>   // std::unique_ptr

#include "util/error.hpp"       // UserError
#include "util/zip_archive.hpp" // ZipArchive

namespace trainer {
namespace {

struct Obj;
// Objects live in the unpickler's arena: a pickle may build cycles (a list that
// holds itself), which reference counting would leak.
using Ref = Obj*;

struct Obj {
  enum Kind { none, boolean, integer, real, string, tuple, list, dict, global, storage, tensor, opaque } kind = none;
  std::int64_t i = 0;
  double f = 0;
  std::string s, s2;                     // string; global: module, name; storage: dtype, key
  std::vector<Ref> items;                // tuple, list
  std::vector<std::pair<Ref, Ref>> map;  // dict
  // tensor: its storage, offset, size and stride (in elements)
  Ref source;
  std::int64_t offset = 0;
  std::vector<std::int64_t> size, stride;
};

class Unpickler {
 public:
  Unpickler(const std::string& bytes, const std::string& what) : b_(bytes), what_(what) {}

  Ref make(Obj::Kind kind) {
    arena_.push_back(std::make_unique<Obj>());
    arena_.back()->kind = kind;
    return arena_.back().get();
  }

  Ref run() {
    for (;;) {
      const unsigned char op = byte();
      switch (op) {
        case 0x80: byte(); break;                      // PROTO
        case 0x95: take(8); break;                     // FRAME
        case '(': marks_.push_back(stack_.size()); break;
        case '}': push(make(Obj::dict)); break;
        case ']': push(make(Obj::list)); break;
        case ')': push(make(Obj::tuple)); break;
        case 'N': push(make(Obj::none)); break;
        case 0x88: push(boolean(true)); break;
        case 0x89: push(boolean(false)); break;
        case 'J': push(integer(le<std::int32_t>())); break;
        case 'K': push(integer(byte())); break;
        case 'M': push(integer(le<std::uint16_t>())); break;
        case 0x8a: push(integer(long_bytes(byte()))); break;             // LONG1
        case 0x8b: push(integer(long_bytes(le<std::uint32_t>()))); break;  // LONG4
        case 'G': {
          std::uint64_t bits = 0;
          for (int k = 0; k < 8; ++k) bits = (bits << 8) | byte();  // big-endian
          double d;
          std::memcpy(&d, &bits, 8);
          auto o = make(Obj::real);
          o->f = d;
          push(o);
          break;
        }
        case 'X': push(string(take(le<std::uint32_t>()))); break;   // BINUNICODE
        case 0x8c: push(string(take(byte()))); break;               // SHORT_BINUNICODE
        case 0x8d: push(string(take(le<std::uint64_t>()))); break;  // BINUNICODE8
        case 'T': push(string(take(le<std::uint32_t>()))); break;   // BINSTRING
        case 'U': push(string(take(byte()))); break;                // SHORT_BINSTRING
        case 'B': push(string(take(le<std::uint32_t>()))); break;   // BINBYTES
        case 'C': push(string(take(byte()))); break;                // SHORT_BINBYTES
        case 't': push(tuple_of(pop_mark())); break;
        case 0x85: push(tuple_of(pop_n(1))); break;
        case 0x86: push(tuple_of(pop_n(2))); break;
        case 0x87: push(tuple_of(pop_n(3))); break;
        case 'c': {
          const std::string module = line(), name = line();
          push(global(module, name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const Ref name = pop(), module = pop();
          push(global(module->s, name->s));
          break;
        }
        case 'R': {
          const Ref args = pop(), callable = pop();
          push(reduce(callable, args));
          break;
        }
        case 0x81: {  // NEWOBJ
          pop();
          const Ref cls = pop();
          push(opaque(cls));
          break;
        }
        case 'b': pop(); break;  // BUILD: state on an object we do not build
        case 'Q': push(persistent(pop())); break;
        case 's': {
          const Ref value = pop(), key = pop();
          set_item(top(), key, value);
          break;
        }
        case 'u': {
          const std::vector<Ref> kv = pop_mark();
          for (std::size_t k = 0; k + 1 < kv.size(); k += 2) set_item(top(), kv[k], kv[k + 1]);
          break;
        }
        case 'a': {
          const Ref value = pop();
          top()->items.push_back(value);
          break;
        }
        case 'e': {
          const std::vector<Ref> values = pop_mark();
          for (const auto& v : values) top()->items.push_back(v);
          break;
        }
        case 'q': memo_[byte()] = top(); break;
        case 'r': memo_[le<std::uint32_t>()] = top(); break;
        case 0x94: memo_[memo_.size()] = top(); break;  // MEMOIZE
        case 'h': push(get(byte())); break;
        case 'j': push(get(le<std::uint32_t>())); break;
        case '.': return pop();
        default:
          fail("unsupported pickle opcode 0x" + hex(op));
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw UserError("cannot read the weights in '" + what_ + "': " + why + " at byte " + std::to_string(at_),
                    "it must be a state dict (or a checkpoint holding one) written by torch.save");
  }
  static std::string hex(unsigned v) {
    const char* digits = "0123456789abcdef";
    return std::string{digits[(v >> 4) & 15], digits[v & 15]};
  }
  unsigned char byte() {
    if (at_ >= b_.size()) fail("the pickle ends early");
    return static_cast<unsigned char>(b_[at_++]);
  }
  std::string take(std::uint64_t n) {
    if (n > b_.size() - at_) fail("the pickle ends early");
    std::string out = b_.substr(at_, n);
    at_ += n;
    return out;
  }
  template <class T>
  T le() {
    const std::string bytes = take(sizeof(T));
    T v;
    std::memcpy(&v, bytes.data(), sizeof(T));  // little-endian hosts, like pickle
    return v;
  }
  std::int64_t long_bytes(std::uint64_t n) {
    if (n > 8) fail("an integer wider than 64 bits");
    const std::string bytes = take(n);
    std::uint64_t v = 0;
    for (std::uint64_t k = 0; k < n; ++k) v |= std::uint64_t(static_cast<unsigned char>(bytes[k])) << (8 * k);
    if (n > 0 && n < 8 && (bytes[n - 1] & 0x80)) v |= ~std::uint64_t(0) << (8 * n);  // sign-extend
    return std::int64_t(v);
  }
  std::string line() {
    const auto end = b_.find('\n', at_);
    if (end == std::string::npos) fail("a GLOBAL without its newline");
    std::string out = b_.substr(at_, end - at_);
    at_ = end + 1;
    return out;
  }
  void push(Ref o) { stack_.push_back(std::move(o)); }
  Ref pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("the pickle's stack underflows");
    Ref o = stack_.back();
    stack_.pop_back();
    return o;
  }
  Ref top() {
    if (stack_.empty()) fail("the pickle's stack underflows");
    return stack_.back();
  }
  std::vector<Ref> pop_n(std::size_t n) {
    std::vector<Ref> out(n);
    for (std::size_t k = n; k-- > 0;) out[k] = pop();
    return out;
  }
  std::vector<Ref> pop_mark() {
    if (marks_.empty()) fail("a MARK is missing");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Ref> out(stack_.begin() + std::ptrdiff_t(mark), stack_.end());
    stack_.resize(mark);
    return out;
  }
  Ref get(std::uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail("a memo reference to nothing");
    return it->second;
  }
  Ref boolean(bool v) {
    auto o = make(Obj::boolean);
    o->i = v;
    return o;
  }
  Ref integer(std::int64_t v) {
    auto o = make(Obj::integer);
    o->i = v;
    return o;
  }
  Ref string(std::string v) {
    auto o = make(Obj::string);
    o->s = std::move(v);
    return o;
  }
  Ref tuple_of(std::vector<Ref> items) {
    auto o = make(Obj::tuple);
    o->items = std::move(items);
    return o;
  }
  Ref global(const std::string& module, const std::string& name) {
    auto o = make(Obj::global);
    o->s = module;
    o->s2 = name;
    return o;
  }
  Ref opaque(const Ref& cls) {
    auto o = make(Obj::opaque);
    if (cls && cls->kind == Obj::global) o->s = cls->s, o->s2 = cls->s2;
    return o;
  }
  void set_item(const Ref& target, const Ref& key, const Ref& value) {
    if (target->kind == Obj::dict) target->map.emplace_back(key, value);  // opaque objects ignore items
  }
  std::vector<std::int64_t> ints(const Ref& t) {
    if (!t || (t->kind != Obj::tuple && t->kind != Obj::list)) fail("a tensor's size or stride is not a tuple");
    std::vector<std::int64_t> out;
    for (const auto& x : t->items) {
      if (x->kind != Obj::integer) fail("a tensor's size or stride holds a non-integer");
      out.push_back(x->i);
    }
    return out;
  }
  Ref reduce(const Ref& callable, const Ref& args) {
    const bool is_global = callable->kind == Obj::global;
    const std::string name = is_global ? callable->s + "." + callable->s2 : "";
    if (name == "collections.OrderedDict" || name == "builtins.dict") return make(Obj::dict);
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      if (args->kind != Obj::tuple || args->items.size() < 4) fail("_rebuild_tensor with too few arguments");
      const Ref& storage = args->items[0];
      if (storage->kind != Obj::storage) fail("a tensor whose storage is not a persistent id");
      auto t = make(Obj::tensor);
      t->source = storage;
      if (args->items[1]->kind != Obj::integer) fail("a tensor offset that is not an integer");
      t->offset = args->items[1]->i;
      t->size = ints(args->items[2]);
      t->stride = ints(args->items[3]);
      if (t->size.size() != t->stride.size()) fail("a tensor whose size and stride differ in length");
      return t;
    }
    if (name == "torch._utils._rebuild_parameter" || name == "torch.nn.parameter.Parameter") {
      if (args->kind == Obj::tuple && !args->items.empty()) return args->items[0];
    }
    return opaque(callable);
  }
  Ref persistent(const Ref& pid) {
    // ('storage', <torch.XStorage>, key, location, numel)
    if (pid->kind != Obj::tuple || pid->items.size() < 5 || pid->items[0]->kind != Obj::string ||
        pid->items[0]->s != "storage" || pid->items[1]->kind != Obj::global || pid->items[2]->kind != Obj::string)
      fail("a persistent id that is not a torch storage");
    auto o = make(Obj::storage);
    o->s = pid->items[1]->s2;  // FloatStorage, HalfStorage, ...
    o->s2 = pid->items[2]->s;  // the key: data/<key> in the archive
    o->i = pid->items[4]->kind == Obj::integer ? pid->items[4]->i : 0;
    return o;
  }

  const std::string& b_;
  std::string what_;
  std::size_t at_ = 0;
  std::vector<Ref> stack_;
  std::vector<std::size_t> marks_;
  std::map<std::uint64_t, Ref> memo_;
  std::vector<std::unique_ptr<Obj>> arena_;
};

StoredType type_of(const std::string& storage, const std::string& what) {
  if (storage == "FloatStorage") return StoredType::f32;
  if (storage == "DoubleStorage") return StoredType::f64;
  if (storage == "HalfStorage") return StoredType::f16;
  if (storage == "BFloat16Storage") return StoredType::bf16;
  if (storage == "LongStorage") return StoredType::i64;
  if (storage == "IntStorage") return StoredType::i32;
  throw UserError("'" + what + "' holds a tensor of type " + storage + ", which the trainer cannot load",
                  "save the weights as float32, float16 or bfloat16");
}

}  // namespace

std::vector<StoredTensor> parse_torch_pickle(const std::string& pickle, const std::string& what,
                                             const std::function<std::string(const std::string& key)>& storage) {
  Unpickler unpickler(pickle, what);
  Ref root = unpickler.run();  // owned by `unpickler`, which outlives its use here
  const auto entry = [](const Ref& dict, const std::string& key) -> Ref {
    for (const auto& [k, v] : dict->map)
      if (k->kind == Obj::string && k->s == key && v->kind == Obj::dict) return v;
    return nullptr;
  };
  if (root->kind != Obj::dict)
    throw UserError("'" + what + "' does not hold a dict of tensors", "save a state_dict: torch.save(model.state_dict(), path)");
  if (Ref inner = entry(root, "state_dict")) root = inner;
  else if (Ref model = entry(root, "model")) root = model;

  std::map<std::string, std::string> storages;  // key -> bytes, read once
  std::vector<StoredTensor> out;
  for (const auto& [key, value] : root->map) {
    if (key->kind != Obj::string || value->kind != Obj::tensor) continue;
    const Obj& t = *value;
    const StoredType type = type_of(t.source->s, what);
    const std::size_t element_bytes = bytes_per_element(type);
    auto it = storages.find(t.source->s2);
    if (it == storages.end()) it = storages.emplace(t.source->s2, storage(t.source->s2)).first;
    const std::string& bytes = it->second;
    StoredTensor st;
    st.name = key->s;
    st.shape = t.size;
    st.type = type;
    std::int64_t count = 1;
    for (auto d : t.size) {
      if (d < 0 || (d > 0 && count > std::int64_t(bytes.size()) / d))
        throw UserError("'" + what + "': tensor '" + st.name + "' has more elements than its storage holds",
                        "the file is truncated or corrupt");
      count *= d;
    }
    st.bytes.resize(std::size_t(count) * element_bytes);
    // Gather through the strides (state dicts are contiguous, but views need not be).
    std::vector<std::int64_t> index(t.size.size(), 0);
    for (std::int64_t n = 0; n < count; ++n) {
      std::int64_t element = t.offset;
      for (std::size_t d = 0; d < index.size(); ++d) element += index[d] * t.stride[d];
      const std::uint64_t at = std::uint64_t(element) * element_bytes;
      if (element < 0 || at + element_bytes > bytes.size())
        throw UserError("'" + what + "': tensor '" + st.name + "' reaches past the end of its storage",
                        "the file is truncated or corrupt");
      std::memcpy(&st.bytes[std::size_t(n) * element_bytes], bytes.data() + at, element_bytes);
      for (std::size_t d = index.size(); d-- > 0;) {
        if (++index[d] < t.size[d]) break;
        index[d] = 0;
      }
    }
    out.push_back(std::move(st));
  }
  return out;
}

std::vector<StoredTensor> read_torch_state_dict(const std::string& path) {
  const ZipArchive archive(path);
  std::string prefix;
  for (const auto& name : archive.names()) {
    const std::string tail = "data.pkl";
    if (name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0) {
      prefix = name.substr(0, name.size() - tail.size());
      break;
    }
  }
  if (prefix.empty() && !archive.contains("data.pkl"))
    throw UserError("'" + path + "' is a zip archive but not a PyTorch file (no data.pkl)",
                    "give a file written by torch.save, a .safetensors file, or a trainer checkpoint (.h5)");
  if (archive.contains(prefix + "byteorder") && archive.read(prefix + "byteorder") != "little")
    throw UserError("'" + path + "' was written on a big-endian machine", "re-save it on a little-endian one");
  return parse_torch_pickle(archive.read(prefix + "data.pkl"), path,
                            [&](const std::string& key) { return archive.read(prefix + "data/" + key); });
}

}  // namespace trainer
