// torch.save's file format, written (see torch_writer.hpp).
#include "util/torch_writer.hpp"

#include <zip.h>  // zip_open, zip_source_buffer, zip_file_add, zip_close

#include <cstring>  // std::memcpy
#include <memory>   // std::unique_ptr

#include "util/atomic_write.hpp"  // PendingFile
#include "util/error.hpp"         // UserError, TRAINER_ASSERT

namespace trainer {

PickleValue PickleValue::boolean(bool b) {
  PickleValue v;
  v.kind_ = Kind::boolean;
  v.bool_ = b;
  return v;
}
PickleValue PickleValue::integer(std::int64_t i) {
  PickleValue v;
  v.kind_ = Kind::integer;
  v.int_ = i;
  return v;
}
PickleValue PickleValue::real(double d) {
  PickleValue v;
  v.kind_ = Kind::real;
  v.real_ = d;
  return v;
}
PickleValue PickleValue::string(std::string s) {
  PickleValue v;
  v.kind_ = Kind::string;
  v.string_ = std::move(s);
  return v;
}
PickleValue PickleValue::list(std::vector<PickleValue> items) {
  PickleValue v;
  v.kind_ = Kind::list;
  v.items_ = std::move(items);
  return v;
}
PickleValue PickleValue::dict() {
  PickleValue v;
  v.kind_ = Kind::dict;
  return v;
}
PickleValue PickleValue::ordered_dict() {
  PickleValue v;
  v.kind_ = Kind::ordered_dict;
  return v;
}
PickleValue PickleValue::tensor(StoredTensor t) {
  TRAINER_ASSERT(t.type == StoredType::f32 || t.type == StoredType::i64, "pickled tensors are f32 or i64");
  std::size_t count = 1;
  for (auto d : t.shape) count *= std::size_t(d);
  TRAINER_ASSERT(t.bytes.size() == count * bytes_per_element(t.type), "tensor " << t.name << ": byte count");
  PickleValue v;
  v.kind_ = Kind::tensor;
  v.tensor_ = std::make_shared<const StoredTensor>(std::move(t));
  return v;
}
PickleValue& PickleValue::set(const std::string& key, PickleValue value) {
  TRAINER_ASSERT(kind_ == Kind::dict || kind_ == Kind::ordered_dict, "set() on a pickle value that is no dict");
  entries_.emplace_back(key, std::move(value));
  return *this;
}
PickleValue& PickleValue::append(PickleValue value) {
  TRAINER_ASSERT(kind_ == Kind::list, "append() on a pickle value that is no list");
  items_.push_back(std::move(value));
  return *this;
}

// Pickle protocol 2, the opcodes torch.save's own pickles use; no memo (nothing is
// shared), so each object is written where it appears.
class PickleWriter {
 public:
  TorchPickle finish(const PickleValue& root) {
    out_.push_back('\x80');  // PROTO 2
    out_.push_back('\x02');
    value(root);
    out_.push_back('.');  // STOP
    return TorchPickle{std::move(out_), std::move(storages_)};
  }

 private:
  void u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(char((v >> (8 * i)) & 0xff));
  }
  void text(const std::string& s) {  // BINUNICODE (UTF-8 bytes as given)
    out_.push_back('X');
    u32(std::uint32_t(s.size()));
    out_ += s;
  }
  void global(const char* module, const char* name) {  // GLOBAL 'module\nname\n'
    out_.push_back('c');
    out_ += module;
    out_.push_back('\n');
    out_ += name;
    out_.push_back('\n');
  }
  void integer(std::int64_t i) {
    if (i >= -2147483648LL && i <= 2147483647LL) {  // BININT
      out_.push_back('J');
      u32(std::uint32_t(std::int32_t(i)));
      return;
    }
    out_.push_back('\x8a');  // LONG1: 8 bytes, two's complement little-endian
    out_.push_back('\x08');
    for (int b = 0; b < 8; ++b) out_.push_back(char((std::uint64_t(i) >> (8 * b)) & 0xff));
  }
  void real(double d) {  // BINFLOAT: big-endian IEEE double
    std::uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    out_.push_back('G');
    for (int b = 7; b >= 0; --b) out_.push_back(char((bits >> (8 * b)) & 0xff));
  }
  void int_tuple(const std::vector<std::int64_t>& values) {
    out_.push_back('(');
    for (auto v : values) integer(v);
    out_.push_back('t');
  }
  void empty_ordered_dict() {
    global("collections", "OrderedDict");
    out_.push_back(')');  // EMPTY_TUPLE
    out_.push_back('R');  // REDUCE
  }
  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)
  // with the storage as a persistent id ('storage', <Type>Storage, key, 'cpu', numel).
  void tensor(const std::shared_ptr<const StoredTensor>& t) {
    const std::string key = std::to_string(storages_.size());
    storages_.push_back(t);
    std::vector<std::int64_t> stride(t->shape.size(), 1);
    std::int64_t numel = 1;
    for (std::size_t i = t->shape.size(); i-- > 0;) {
      stride[i] = numel;
      numel *= t->shape[i];
    }
    global("torch._utils", "_rebuild_tensor_v2");
    out_.push_back('(');
    out_.push_back('(');
    text("storage");
    global("torch", t->type == StoredType::f32 ? "FloatStorage" : "LongStorage");
    text(key);
    text("cpu");
    integer(numel);
    out_.push_back('t');
    out_.push_back('Q');  // BINPERSID
    integer(0);           // storage offset
    int_tuple(t->shape);
    int_tuple(stride);
    out_.push_back('\x89');  // requires_grad False
    empty_ordered_dict();    // backward hooks
    out_.push_back('t');
    out_.push_back('R');
  }
  void value(const PickleValue& v) {
    switch (v.kind_) {
      case PickleValue::Kind::none: out_.push_back('N'); break;
      case PickleValue::Kind::boolean: out_.push_back(v.bool_ ? '\x88' : '\x89'); break;
      case PickleValue::Kind::integer: integer(v.int_); break;
      case PickleValue::Kind::real: real(v.real_); break;
      case PickleValue::Kind::string: text(v.string_); break;
      case PickleValue::Kind::list:
        out_.push_back(']');
        if (!v.items_.empty()) {
          out_.push_back('(');
          for (const auto& item : v.items_) value(item);
          out_.push_back('e');  // APPENDS
        }
        break;
      case PickleValue::Kind::dict:
      case PickleValue::Kind::ordered_dict:
        if (v.kind_ == PickleValue::Kind::dict) out_.push_back('}');
        else empty_ordered_dict();
        if (!v.entries_.empty()) {
          out_.push_back('(');
          for (const auto& [key, item] : v.entries_) {
            text(key);
            value(item);
          }
          out_.push_back('u');  // SETITEMS
        }
        break;
      case PickleValue::Kind::tensor: tensor(v.tensor_); break;
    }
  }

  std::string out_;
  std::vector<std::shared_ptr<const StoredTensor>> storages_;
};

TorchPickle pickle_for_torch(const PickleValue& root) { return PickleWriter().finish(root); }

namespace {

struct ZipDiscard {
  void operator()(zip_t* z) const { zip_discard(z); }
};

void add_entry(zip_t* z, const std::string& name, const std::string& bytes, const std::string& path) {
  zip_source_t* source = zip_source_buffer(z, bytes.data(), bytes.size(), 0);  // bytes outlive zip_close
  if (source == nullptr) throw UserError("cannot write '" + path + "': " + zip_strerror(z));
  const zip_int64_t index = zip_file_add(z, name.c_str(), source, ZIP_FL_ENC_UTF_8);
  if (index < 0) {
    zip_source_free(source);
    throw UserError("cannot write '" + path + "': " + zip_strerror(z));
  }
  // Stored, not deflated: torch.save stores, and torch.load may map storages in place.
  if (zip_set_file_compression(z, zip_uint64_t(index), ZIP_CM_STORE, 0) != 0)
    throw UserError("cannot write '" + path + "': " + zip_strerror(z));
}

}  // namespace

void write_torch_file(const std::string& path, const PickleValue& root) {
  const TorchPickle p = pickle_for_torch(root);
  const std::string version = "3\n", byteorder = "little";
  PendingFile pending(path);
  int error = 0;
  std::unique_ptr<zip_t, ZipDiscard> z(zip_open(pending.temp_path().c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error));
  if (!z) throw UserError("cannot create '" + pending.temp_path() + "' (zip error " + std::to_string(error) + ")");
  add_entry(z.get(), "archive/data.pkl", p.pickle, path);
  add_entry(z.get(), "archive/byteorder", byteorder, path);
  for (std::size_t i = 0; i < p.storages.size(); ++i)
    add_entry(z.get(), "archive/data/" + std::to_string(i), p.storages[i]->bytes, path);
  add_entry(z.get(), "archive/version", version, path);
  if (zip_close(z.get()) != 0) throw UserError("cannot write '" + path + "': " + zip_strerror(z.get()));
  z.release();  // closed: nothing left to discard
  pending.commit();
}

}  // namespace trainer
