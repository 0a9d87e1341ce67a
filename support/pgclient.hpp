// zizq support: a small libpq wrapper for the stress tests and the benchmark
// (client programs, not part of the extension).
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace zizq::client {

class PgError : public std::runtime_error {
 public:
  PgError(const std::string &msg, std::string sqlstate) : std::runtime_error(msg), sqlstate_(std::move(sqlstate)) {}
  const std::string &sqlstate() const { return sqlstate_; }

 private:
  std::string sqlstate_;
};

// Rows of a result as text; NULL is the empty string (and null() says so).
class Result {
 public:
  explicit Result(PGresult *r) : r_(r) {}
  Result(Result &&o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Result &operator=(Result &&o) noexcept {
    std::swap(r_, o.r_);
    return *this;
  }
  Result(const Result &) = delete;
  ~Result() {
    if (r_) PQclear(r_);
  }
  int rows() const { return PQntuples(r_); }
  std::string get(int row, int col) const { return PQgetvalue(r_, row, col); }
  bool null(int row, int col) const { return PQgetisnull(r_, row, col); }
  int64_t num(int row, int col) const { return std::strtoll(PQgetvalue(r_, row, col), nullptr, 10); }
  double real(int row, int col) const { return std::strtod(PQgetvalue(r_, row, col), nullptr); }

 private:
  PGresult *r_;
};

class Conn {
 public:
  // Connection parameters come from the environment (PGHOST, PGPORT, ...).
  explicit Conn(const std::string &conninfo = "") {
    c_ = PQconnectdb(conninfo.c_str());
    if (PQstatus(c_) != CONNECTION_OK) {
      std::string msg = PQerrorMessage(c_);
      PQfinish(c_);
      c_ = nullptr;
      throw PgError("connection failed: " + msg, "08000");
    }
  }
  Conn(const Conn &) = delete;
  ~Conn() { close(); }
  void close() {
    if (c_) PQfinish(c_);
    c_ = nullptr;
  }
  bool ok() const { return c_ && PQstatus(c_) == CONNECTION_OK; }
  int backend_pid() const { return PQbackendPID(c_); }

  Result exec(const std::string &sql) { return check(PQexec(c_, sql.c_str()), sql); }

  Result exec(const std::string &sql, const std::vector<std::string> &params) {
    std::vector<const char *> values;
    for (const auto &p : params) values.push_back(p.c_str());
    return check(PQexecParams(c_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                              nullptr, 0),
                 sql);
  }

  // Runs `sql` as a statement prepared on this connection at its first use
  // (named s1, s2, ...), as a worker library prepares its hot statements:
  // the server then parses and plans it once, not at every call.
  Result exec_prepared(const std::string &sql, const std::vector<std::string> &params) {
    const std::string &name = prepare(sql);
    std::vector<const char *> values;
    for (const auto &p : params) values.push_back(p.c_str());
    return check(PQexecPrepared(c_, name.c_str(), static_cast<int>(values.size()), values.data(), nullptr, nullptr, 0),
                 sql);
  }

  // The name of `sql` prepared on this connection, preparing it the first time.
  const std::string &prepare(const std::string &sql) {
    auto it = prepared_.find(sql);
    if (it == prepared_.end()) {
      std::string name = "s" + std::to_string(prepared_.size() + 1);
      check(PQprepare(c_, name.c_str(), sql.c_str(), 0, nullptr), sql);
      it = prepared_.emplace(sql, name).first;
    }
    return it->second;
  }

  PGconn *raw() { return c_; }

 private:
  Result check(PGresult *r, const std::string &sql) {
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return Result(r);
    std::string state = PQresultErrorField(r, PG_DIAG_SQLSTATE) ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : "";
    std::string msg = PQresultErrorMessage(r);
    PQclear(r);
    throw PgError(msg + " [" + sql.substr(0, 120) + "]", state);
  }

  PGconn *c_ = nullptr;
  std::map<std::string, std::string> prepared_;  // SQL text -> statement name
};

// Seconds of a steady clock, for timing.
inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace zizq::client
