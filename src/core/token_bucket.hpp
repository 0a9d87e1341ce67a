// zizq core: token arithmetic for one budget, exact and clock-injected.
//
// Every budget keeps in_flight (the cost of its jobs now running, whatever the
// strategy: a while_in_flight budget pays with it, and it keeps a change of
// strategy exact). A time_based budget also keeps a continuous-drip bucket.
//
// Bucket units: a token is worth D = duration_us units and the bucket gains
// `allocation` units per microsecond, so the refill is an exact integer sum and
// fractional progress is carried without rounding (60/minute, two 500 ms
// refills make exactly one token). __int128 keeps capacity * D exact for any
// allowed duration.
//
// Times are microseconds of a monotonic clock supplied by the caller, so tests
// drive the clock and the server uses CLOCK_MONOTONIC.
#pragma once

#include "core/cpp_only.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include "core/policy.hpp"

namespace zizq::core {

using Units = __int128;
// The same, stored with 8-byte alignment: PostgreSQL's allocators (palloc,
// shared memory, dynahash) align to 8, and an __int128 field would otherwise
// be accessed with 16-byte-aligned instructions.
typedef __int128 StoredUnits __attribute__((aligned(8)));

// Plain data: lives in shared memory as it is.
struct TokenState {
  int64_t in_flight = 0;  // cost of jobs now in flight (all strategies)
  StoredUnits units = 0;  // time_based: tokens * duration_us
  int64_t settled_us = 0; // time_based: instant `units` refers to
};

// A fresh budget: a time_based bucket starts full (SPEC §3), nothing in flight.
TokenState fresh_state(const Policy &p, int64_t now_us);

// Tokens a job could spend now: allocation - in_flight for while_in_flight
// (negative while in debt), whole tokens in the bucket for time_based.
int64_t whole_tokens(const Policy &p, const TokenState &s, int64_t now_us);

// Tokens including fractional progress, as decimal text ("2.5", "0.083333"),
// for the budget_state view. Never negative.
std::string tokens_text(const Policy &p, const TokenState &s, int64_t now_us);

// while_in_flight: how much in-flight cost exceeds the allocation (a shrunk
// budget); 0 otherwise.
int64_t debt(const Policy &p, const TokenState &s);

bool can_pay(const Policy &p, const TokenState &s, int64_t cost, int64_t now_us);

// Spends `cost` if it can be paid now and records the job as in flight;
// returns false (and changes nothing) otherwise.
//
// grace_us: tokens that came due less than grace_us ago are charged as of
// their due instant rather than as of the hand-off, so wake-up latency does
// not erode the rate (with burst 1, every late hand-off would otherwise lose
// the drip of its lateness). The backdating is bounded by grace_us and by the
// time one token takes to drip, so the dispatched cost in any window of
// length w stays within capacity + rate * w + 1. Tokens that had been sitting
// in the bucket longer are charged now: an idle bucket gains nothing.
bool debit(const Policy &p, TokenState &s, int64_t cost, int64_t now_us, int64_t grace_us);

// Undoes a debit whose transaction rolled back: the job never ran, so its
// tokens come back (capped at the capacity) and it is no longer in flight.
void refund(const Policy &p, TokenState &s, int64_t cost, int64_t now_us);

// A job bound to this budget left in_flight. Only while_in_flight budgets get
// tokens back, and only once the debt is paid; time_based never refunds.
void release(TokenState &s, int64_t cost);

// When `cost` tokens will be available, if nothing else spends them: now_us if
// already affordable; nullopt when only a release can help (while_in_flight)
// or the cost exceeds the capacity.
std::optional<int64_t> due_time(const Policy &p, const TokenState &s, int64_t cost, int64_t now_us);

// When a job of `cost` can be paid behind jobs costing `ahead_cost` in all
// that stand before it in the budget's line, if each is paid as soon as the
// budget can and nothing else spends: tokens dripping in go to those ahead
// first, so the job waits for ahead_cost + cost of them (never clipped by
// the capacity, since each payment makes room). nullopt when only releases
// can help, or the job's own cost exceeds the capacity.
inline constexpr int64_t kFarFutureUs = 1000LL * 365 * 24 * 3600 * 1000000;  // a thousand years
std::optional<int64_t> due_time_behind(const Policy &p, const TokenState &s, int64_t ahead_cost, int64_t cost,
                                       int64_t now_us);

// When the next whole token drips in; nullopt when full or not time_based.
std::optional<int64_t> next_token_time(const Policy &p, const TokenState &s, int64_t now_us);

// A policy change applied to a live budget: elapsed time is settled at the old
// rate, then tokens are rescaled and capped to the new capacity. A change of
// strategy starts a fresh (full) bucket; in-flight cost carries over, so a
// shrunk while_in_flight budget shows the excess as debt.
void change_policy(const Policy &from, const Policy &to, TokenState &s, int64_t now_us);

// Time (µs) one token takes to drip: duration / allocation, at least 1.
int64_t token_interval_us(const Policy &p);

}  // namespace zizq::core
