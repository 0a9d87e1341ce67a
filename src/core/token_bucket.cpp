// zizq core: token arithmetic (see token_bucket.hpp for the model).
#include "core/token_bucket.hpp"

#include <algorithm>
#include <cstdio>

namespace zizq::core {
namespace {

Units unit_per_token(const Policy &p) { return Units(p.duration_ms) * 1000; }
Units capacity_units(const Policy &p) { return Units(p.capacity()) * unit_per_token(p); }

// Drips tokens in up to `now_us`, never past the capacity.
void settle(const Policy &p, TokenState &s, int64_t now_us) {
  if (!p.time_based() || now_us <= s.settled_us) return;
  Units gained = Units(p.allocation) * (now_us - s.settled_us);
  s.units = std::min(capacity_units(p), s.units + gained);
  s.settled_us = now_us;
}

TokenState settled_copy(const Policy &p, const TokenState &s, int64_t now_us) {
  TokenState copy = s;
  settle(p, copy, now_us);
  return copy;
}

// The instant the bucket, left alone, holds `need` units. `need` must not
// exceed the capacity, so the cap never stops the climb.
int64_t reach_time(const Policy &p, const TokenState &s, Units need) {
  if (s.units >= need) return s.settled_us;
  Units missing = need - s.units;
  Units wait = (missing + p.allocation - 1) / p.allocation;
  return s.settled_us + static_cast<int64_t>(wait);
}

// Shared memory may be written by a backend whose clock reading is a little
// older than the last settle; time never runs backwards for a budget.
int64_t not_before_settle(const TokenState &s, int64_t now_us) { return std::max(now_us, s.settled_us); }

}  // namespace

int64_t token_interval_us(const Policy &p) {
  if (!p.time_based()) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(unit_per_token(p) / p.allocation));
}

TokenState fresh_state(const Policy &p, int64_t now_us) {
  TokenState s;
  s.settled_us = now_us;
  if (p.time_based()) s.units = capacity_units(p);
  return s;
}

int64_t whole_tokens(const Policy &p, const TokenState &s, int64_t now_us) {
  if (!p.time_based()) return p.allocation - s.in_flight;
  TokenState now = settled_copy(p, s, not_before_settle(s, now_us));
  return static_cast<int64_t>(now.units / unit_per_token(p));
}

std::string tokens_text(const Policy &p, const TokenState &s, int64_t now_us) {
  char buf[64];
  if (!p.time_based()) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(std::max<int64_t>(0, p.allocation - s.in_flight)));
    return buf;
  }
  TokenState now = settled_copy(p, s, not_before_settle(s, now_us));
  Units per = unit_per_token(p);
  long long whole = static_cast<long long>(now.units / per);
  long long micro = static_cast<long long>((now.units % per) * 1000000 / per);
  if (micro == 0) {
    std::snprintf(buf, sizeof buf, "%lld", whole);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%lld.%06lld", whole, micro);
  std::string text(buf);
  while (text.back() == '0') text.pop_back();
  return text;
}

int64_t debt(const Policy &p, const TokenState &s) {
  if (p.time_based()) return 0;
  return std::max<int64_t>(0, s.in_flight - p.allocation);
}

bool can_pay(const Policy &p, const TokenState &s, int64_t cost, int64_t now_us) {
  if (cost > p.capacity()) return false;
  if (!p.time_based()) return p.allocation - s.in_flight >= cost;
  TokenState now = settled_copy(p, s, not_before_settle(s, now_us));
  return now.units >= Units(cost) * unit_per_token(p);
}

bool debit(const Policy &p, TokenState &s, int64_t cost, int64_t now_us, int64_t grace_us) {
  now_us = not_before_settle(s, now_us);
  if (!can_pay(p, s, cost, now_us)) return false;
  if (p.time_based()) {
    Units need = Units(cost) * unit_per_token(p);
    int64_t grace = std::min(std::max<int64_t>(0, grace_us), token_interval_us(p));
    // Tokens that came due within the grace window were waited for: charge
    // them at their due instant (never before the last settle, as reach_time
    // starts there). Tokens that had been sitting in the bucket are charged
    // now, so an idle bucket gains nothing.
    int64_t reach = reach_time(p, s, need);
    int64_t charged_at = reach >= now_us - grace ? reach : now_us;
    settle(p, s, charged_at);
    s.units -= need;
  }
  s.in_flight += cost;
  return true;
}

void refund(const Policy &p, TokenState &s, int64_t cost, int64_t now_us) {
  if (p.time_based()) {
    settle(p, s, not_before_settle(s, now_us));
    s.units = std::min(capacity_units(p), s.units + Units(cost) * unit_per_token(p));
  }
  release(s, cost);
}

void release(TokenState &s, int64_t cost) { s.in_flight = std::max<int64_t>(0, s.in_flight - cost); }

std::optional<int64_t> due_time(const Policy &p, const TokenState &s, int64_t cost, int64_t now_us) {
  now_us = not_before_settle(s, now_us);
  if (cost > p.capacity()) return std::nullopt;
  if (can_pay(p, s, cost, now_us)) return now_us;
  if (!p.time_based()) return std::nullopt;
  TokenState now = settled_copy(p, s, now_us);
  return reach_time(p, now, Units(cost) * unit_per_token(p));
}

std::optional<int64_t> due_time_behind(const Policy &p, const TokenState &s, int64_t ahead_cost, int64_t cost,
                                       int64_t now_us) {
  if (ahead_cost <= 0) return due_time(p, s, cost, now_us);
  now_us = not_before_settle(s, now_us);
  if (cost > p.capacity()) return std::nullopt;
  if (!p.time_based())  // all of them at once, or a release first
    return p.allocation - s.in_flight >= ahead_cost + cost ? std::optional<int64_t>(now_us) : std::nullopt;
  TokenState now = settled_copy(p, s, now_us);
  Units need = Units(ahead_cost + cost) * unit_per_token(p);
  // A long line behind a slow budget can lie centuries ahead: an answer
  // past kFarFutureUs is given as that (timestamps end in 294276 AD).
  if ((need - now.units) / p.allocation > Units(kFarFutureUs)) return now_us + kFarFutureUs;
  return std::max(now_us, reach_time(p, now, need));
}

std::optional<int64_t> next_token_time(const Policy &p, const TokenState &s, int64_t now_us) {
  if (!p.time_based()) return std::nullopt;
  TokenState now = settled_copy(p, s, not_before_settle(s, now_us));
  if (now.units >= capacity_units(p)) return std::nullopt;
  Units per = unit_per_token(p);
  Units next_whole = (now.units / per + 1) * per;
  return reach_time(p, now, next_whole);
}

void change_policy(const Policy &from, const Policy &to, TokenState &s, int64_t now_us) {
  now_us = not_before_settle(s, now_us);
  settle(from, s, now_us);
  if (!to.time_based()) {
    s.units = 0;
    s.settled_us = now_us;
    return;
  }
  if (!from.time_based()) {
    s.units = capacity_units(to);
    s.settled_us = now_us;
    return;
  }
  // Same tokens, new scale: whole tokens exactly, the fraction floored.
  Units old_per = unit_per_token(from), new_per = unit_per_token(to);
  Units rescaled = (s.units / old_per) * new_per + (s.units % old_per) * new_per / old_per;
  s.units = std::min(capacity_units(to), rescaled);
  s.settled_us = now_us;
}

}  // namespace zizq::core
