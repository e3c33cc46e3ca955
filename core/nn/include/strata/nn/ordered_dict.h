// OrderedDict: string keys in insertion order with O(1) lookup (libtorch's torch::OrderedDict),
// the container behind named_parameters(), state_dict() and optimizer state dicts.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "strata/core/error.h"

namespace strata::nn {

template <class V>
class OrderedDict {
 public:
  using Item = std::pair<std::string, V>;
  using iterator = typename std::vector<Item>::iterator;
  using const_iterator = typename std::vector<Item>::const_iterator;

  OrderedDict() = default;
  OrderedDict(std::initializer_list<Item> items) {
    for (const Item& it : items) insert(it.first, it.second);
  }

  // Appends `key`; throws ValueError if it is already present.
  V& insert(const std::string& key, V value) {
    STRATA_CHECK(index_.find(key) == index_.end(), ValueError, "OrderedDict: duplicate key '", key, "'");
    index_.emplace(key, items_.size());
    items_.emplace_back(key, std::move(value));
    return items_.back().second;
  }
  // Replaces the value of an existing key in place, or appends a new one.
  V& insert_or_assign(const std::string& key, V value) {
    if (V* v = find(key)) return *v = std::move(value);
    return insert(key, std::move(value));
  }
  // Removes `key` (keeps the order of the rest); returns whether it was present.
  bool erase(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    size_t pos = it->second;
    items_.erase(items_.begin() + std::ptrdiff_t(pos));
    index_.erase(it);
    for (auto& [k, i] : index_)
      if (i > pos) --i;
    return true;
  }

  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  V* find(const std::string& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  const V* find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  // Throws IndexError naming the key when absent.
  const V& at(const std::string& key) const {
    const V* v = find(key);
    STRATA_CHECK(v != nullptr, IndexError, "OrderedDict: no key '", key, "'");
    return *v;
  }
  V& at(const std::string& key) { return const_cast<V&>(std::as_const(*this).at(key)); }
  const V& operator[](const std::string& key) const { return at(key); }
  V& operator[](const std::string& key) { return at(key); }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() {
    items_.clear();
    index_.clear();
  }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  const std::vector<Item>& items() const { return items_; }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const Item& it : items_) out.push_back(it.first);
    return out;
  }
  std::vector<V> values() const {
    std::vector<V> out;
    out.reserve(items_.size());
    for (const Item& it : items_) out.push_back(it.second);
    return out;
  }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace strata::nn
