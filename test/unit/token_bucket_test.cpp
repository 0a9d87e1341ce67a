// Token arithmetic with an injected clock (µs): the figures SPEC §3 and the
// budgets guide promise.
#include "check.hpp"
#include "core/policy.hpp"
#include "core/token_bucket.hpp"

using namespace zizq::core;

namespace {

constexpr int64_t kMs = 1000;
constexpr int64_t kSec = 1000 * kMs;

Policy time_based(int64_t allocation, int64_t duration_ms, int64_t burst = 0) {
  return make_policy("t", allocation, "time_based", duration_ms, burst > 0 ? std::optional<int64_t>(burst) : std::nullopt);
}

Policy in_flight(int64_t allocation) { return make_policy("c", allocation, "while_in_flight", std::nullopt, std::nullopt); }

// Spends every whole token at `now`.
void drain(const Policy &p, TokenState &s, int64_t now) {
  while (debit(p, s, 1, now, 0)) {
  }
}

}  // namespace

TEST(bucket_starts_full) {
  Policy p = time_based(6, 600);
  TokenState s = fresh_state(p, 0);
  CHECK_EQ(whole_tokens(p, s, 0), 6);
  CHECK_EQ(tokens_text(p, s, 0), std::string("6"));
}

TEST(sixty_per_minute_drained_holds_five_after_five_seconds) {
  Policy p = time_based(60, 60000);
  TokenState s = fresh_state(p, 0);
  drain(p, s, 0);
  CHECK_EQ(whole_tokens(p, s, 0), 0);
  CHECK_EQ(whole_tokens(p, s, 5 * kSec), 5);
  CHECK_EQ(tokens_text(p, s, 5 * kSec), std::string("5"));
  CHECK_EQ(tokens_text(p, s, 5 * kSec + 500 * kMs), std::string("5.5"));
}

TEST(two_half_second_refills_make_one_token) {
  Policy p = time_based(60, 60000);
  TokenState s = fresh_state(p, 0);
  drain(p, s, 0);
  CHECK(!can_pay(p, s, 1, 500 * kMs));
  // Settle at 500 ms (a refused debit settles nothing, so force one with a
  // refund-free policy change to the same policy), then again at 1 s.
  change_policy(p, p, s, 500 * kMs);
  CHECK_EQ(tokens_text(p, s, 500 * kMs), std::string("0.5"));
  CHECK(!can_pay(p, s, 1, 1 * kSec - 1));
  CHECK(can_pay(p, s, 1, 1 * kSec));
  CHECK(debit(p, s, 1, 1 * kSec, 0));
  CHECK_EQ(tokens_text(p, s, 1 * kSec), std::string("0"));
}

TEST(fractional_progress_is_carried_exactly) {
  // 7 per 3 s: a token every 428571.43 µs. 7000 refills of 3 s/7000 each
  // must add up to exactly 7 tokens, with no rounding loss.
  Policy p = time_based(7, 3000);
  TokenState s = fresh_state(p, 0);
  drain(p, s, 0);
  int64_t step = 3 * kSec / 7000;  // 428 µs; 7000 * 428 = 2.996 s
  int64_t t = 0;
  for (int i = 0; i < 7000; ++i) {
    t += step;
    change_policy(p, p, s, t);
  }
  change_policy(p, p, s, 3 * kSec);
  CHECK_EQ(whole_tokens(p, s, 3 * kSec), 7);
  CHECK_EQ(tokens_text(p, s, 3 * kSec), std::string("7"));
}

TEST(ten_per_minute_without_burst_allows_twenty_in_the_first_minute) {
  Policy p = time_based(10, 60000);
  TokenState s = fresh_state(p, 0);
  int dispatched = 0;
  for (int64_t t = 0; t <= 60 * kSec; t += 100 * kMs)
    while (debit(p, s, 1, t, 0)) ++dispatched;
  CHECK_EQ(dispatched, 20);
}

TEST(burst_caps_the_opening_spike_not_the_rate) {
  Policy p = time_based(100, 60000, 5);
  TokenState s = fresh_state(p, 0);
  int at_start = 0;
  while (debit(p, s, 1, 0, 0)) ++at_start;
  CHECK_EQ(at_start, 5);
  // Long-run rate unchanged: 100 per minute.
  int dispatched = 0;
  for (int64_t t = 10 * kMs; t <= 60 * kSec; t += 10 * kMs)
    while (debit(p, s, 1, t, 0)) ++dispatched;
  CHECK_EQ(dispatched, 100);
}

TEST(burst_one_paces_exactly) {
  Policy p = time_based(6, 600, 1);  // one every 100 ms
  TokenState s = fresh_state(p, 0);
  std::vector<int64_t> times;
  for (int64_t t = 0; t <= 1000 * kMs; t += kMs)
    if (debit(p, s, 1, t, 0)) times.push_back(t);
  CHECK_EQ(times.size(), size_t(11));
  for (size_t i = 0; i < times.size(); ++i) CHECK_EQ(times[i], int64_t(i) * 100 * kMs);
}

TEST(idle_bucket_banks_no_more_than_its_burst) {
  Policy p = time_based(100, 60000, 5);
  TokenState s = fresh_state(p, 0);
  drain(p, s, 0);
  CHECK_EQ(whole_tokens(p, s, 3600 * kSec), 5);
}

TEST(burst_above_allocation_fills_across_periods) {
  Policy p = time_based(100, 60000, 200);
  TokenState s = fresh_state(p, 0);
  drain(p, s, 0);
  CHECK_EQ(whole_tokens(p, s, 60 * kSec), 100);
  CHECK_EQ(whole_tokens(p, s, 120 * kSec), 200);
  CHECK_EQ(whole_tokens(p, s, 240 * kSec), 200);
}

TEST(grace_charges_late_waiters_at_the_due_instant) {
  Policy p = time_based(200, 1000, 1);  // 200/s: a token every 5 ms
  TokenState s = fresh_state(p, 0);
  CHECK(debit(p, s, 1, 0, 5 * kMs));
  // Each hand-off is 1 ms late; with grace the pace stays one per 5 ms.
  int64_t due = 5 * kMs;
  for (int i = 0; i < 1000; ++i, due += 5 * kMs) {
    CHECK(!can_pay(p, s, 1, due - 1));
    CHECK(debit(p, s, 1, due + kMs, 5 * kMs));
  }
  // Without grace the same lateness loses a millisecond per token.
  TokenState late = fresh_state(p, 0);
  CHECK(debit(p, late, 1, 0, 0));
  int64_t t = 0;
  for (int i = 0; i < 1000; ++i) {
    auto next = due_time(p, late, 1, t);
    t = *next + kMs;
    CHECK(debit(p, late, 1, t, 0));
  }
  CHECK_EQ(t, 1000 * 6 * kMs);
}

TEST(grace_never_gifts_an_idle_bucket) {
  Policy p = time_based(200, 1000, 1);
  TokenState s = fresh_state(p, 0);
  CHECK(debit(p, s, 1, 10 * kSec, 5 * kMs));  // full since long ago: charged now
  CHECK(!can_pay(p, s, 1, 10 * kSec + 5 * kMs - 1));
  CHECK(can_pay(p, s, 1, 10 * kSec + 5 * kMs));
}

TEST(grace_is_bounded_by_one_token_interval) {
  Policy p = time_based(1000, 1000, 1);  // a token every 1 ms
  TokenState s = fresh_state(p, 0);
  CHECK(debit(p, s, 1, 0, 0));
  // Due at 1 ms, handed off at 3 ms with a 5 ms grace: backdating is capped
  // at one interval (1 ms), which is less than the lateness, so charged now.
  CHECK(debit(p, s, 1, 3 * kMs, 5 * kMs));
  CHECK(!can_pay(p, s, 1, 4 * kMs - 1));
}

TEST(while_in_flight_returns_tokens_on_release) {
  Policy p = in_flight(5);
  TokenState s = fresh_state(p, 0);
  for (int i = 0; i < 5; ++i) CHECK(debit(p, s, 1, 0, 0));
  CHECK(!debit(p, s, 1, 0, 0));
  CHECK_EQ(whole_tokens(p, s, 0), 0);
  release(s, 1);
  CHECK(debit(p, s, 1, 0, 0));
  CHECK(!due_time(p, s, 1, 0).has_value());  // only a release can help
}

TEST(debt_is_paid_before_release_frees_tokens) {
  Policy six = in_flight(6);
  TokenState s = fresh_state(six, 0);
  for (int i = 0; i < 6; ++i) CHECK(debit(six, s, 1, 0, 0));
  Policy one = in_flight(1);
  change_policy(six, one, s, 0);
  CHECK_EQ(debt(one, s), 5);
  for (int i = 0; i < 5; ++i) {
    release(s, 1);
    CHECK(!can_pay(one, s, 1, 0));
  }
  CHECK_EQ(debt(one, s), 0);
  release(s, 1);
  CHECK(can_pay(one, s, 1, 0));
}

TEST(costs_weigh_against_the_pool) {
  Policy p = in_flight(20);
  TokenState s = fresh_state(p, 0);
  for (int i = 0; i < 3; ++i) CHECK(debit(p, s, 5, 0, 0));
  CHECK(debit(p, s, 2, 0, 0));
  CHECK(debit(p, s, 2, 0, 0));
  CHECK(!debit(p, s, 2, 0, 0));
  CHECK(debit(p, s, 1, 0, 0));
}

TEST(refund_undoes_a_rolled_back_debit) {
  Policy p = time_based(2, 1000);
  TokenState s = fresh_state(p, 0);
  CHECK(debit(p, s, 2, 0, 0));
  refund(p, s, 2, 0);
  CHECK_EQ(whole_tokens(p, s, 0), 2);
  CHECK_EQ(s.in_flight, 0);
  // A refund never overfills the bucket.
  CHECK(debit(p, s, 1, 0, 0));
  refund(p, s, 1, 10 * kSec);
  CHECK_EQ(whole_tokens(p, s, 10 * kSec), 2);
}

TEST(time_based_never_refunds_on_release) {
  Policy p = time_based(1, 1000);
  TokenState s = fresh_state(p, 0);
  CHECK(debit(p, s, 1, 0, 0));
  release(s, 1);
  CHECK(!can_pay(p, s, 1, 999 * kMs));
  CHECK(can_pay(p, s, 1, 1000 * kMs));
}

TEST(due_time_names_the_instant_tokens_suffice) {
  Policy p = time_based(6, 600);
  TokenState s = fresh_state(p, 0);
  drain(p, s, 0);
  CHECK_EQ(*due_time(p, s, 1, 0), 100 * kMs);
  CHECK_EQ(*due_time(p, s, 3, 0), 300 * kMs);
  CHECK(!due_time(p, s, 7, 0).has_value());  // above the capacity
  CHECK_EQ(*next_token_time(p, s, 150 * kMs), 200 * kMs);
  CHECK(!next_token_time(p, fresh_state(p, 0), 0).has_value());
}

TEST(due_time_behind_counts_the_jobs_ahead) {
  Policy p = time_based(6, 600, 1);  // one every 100 ms, burst 1
  TokenState s = fresh_state(p, 0);
  drain(p, s, 0);
  CHECK_EQ(*due_time_behind(p, s, 0, 1, 0), 100 * kMs);
  CHECK_EQ(*due_time_behind(p, s, 3, 1, 0), 400 * kMs);  // three ahead: the fourth token, past the burst
  CHECK_EQ(*due_time_behind(p, s, 3, 1, 50 * kMs), 400 * kMs);
  CHECK(!due_time_behind(p, s, 3, 2, 0).has_value());  // its own cost above the capacity
  Policy full = time_based(6, 600);
  TokenState f = fresh_state(full, 0);  // 6 tokens now
  CHECK_EQ(*due_time_behind(full, f, 5, 1, 0), 0);
  CHECK_EQ(*due_time_behind(full, f, 6, 2, 0), 200 * kMs);
  Policy c = in_flight(3);
  TokenState cs = fresh_state(c, 0);
  CHECK_EQ(*due_time_behind(c, cs, 2, 1, 7), 7);
  CHECK(!due_time_behind(c, cs, 3, 1, 7).has_value());  // a release first
  Policy decade = time_based(1, 315576000000, 1);  // one token in ten years
  TokenState d = fresh_state(decade, 0);
  drain(decade, d, 0);
  CHECK_EQ(*due_time_behind(decade, d, 29000, 1, 5), 5 + kFarFutureUs);  // saturated, no overflow
}

TEST(policy_change_settles_at_the_old_rate_then_caps) {
  Policy slow = time_based(60, 60000);  // 1/s
  TokenState s = fresh_state(slow, 0);
  drain(slow, s, 0);
  Policy fast = time_based(600, 60000, 3);  // 10/s, burst 3
  change_policy(slow, fast, s, 2 * kSec);   // 2 tokens accrued at the old rate
  CHECK_EQ(whole_tokens(fast, s, 2 * kSec), 2);
  CHECK_EQ(whole_tokens(fast, s, 2 * kSec + 100 * kMs), 3);  // new rate, capped at 3
  CHECK_EQ(whole_tokens(fast, s, 60 * kSec), 3);
}

TEST(strategy_change_keeps_in_flight_cost) {
  Policy rate = time_based(10, 1000);
  TokenState s = fresh_state(rate, 0);
  CHECK(debit(rate, s, 3, 0, 0));
  Policy conc = in_flight(2);
  change_policy(rate, conc, s, 0);
  CHECK_EQ(debt(conc, s), 1);
  release(s, 3);
  CHECK_EQ(whole_tokens(conc, s, 0), 2);
  change_policy(conc, rate, s, 0);
  CHECK_EQ(whole_tokens(rate, s, 0), 10);  // a new bucket starts full
}
