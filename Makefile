# zizq — PGXS build. `make && make install` builds and installs the
# extension; `make installcheck` runs pg_regress, the isolation specs and the
# crash tests (TAP), each on its own temporary cluster; `make unit` builds
# and runs the C++ unit tests of src/core (no server needed).

MODULE_big = zizq
EXTENSION = zizq
DATA = sql/zizq--1.0.sql
PGFILEDESC = "zizq - job queue with budgets"

CORE_SRCS = $(wildcard src/core/*.cpp)
PG_SRCS = $(wildcard src/pg/*.cpp)
DISPATCHER_SRCS = $(wildcard src/dispatcher/*.cpp)
OBJS = $(CORE_SRCS:.cpp=.o) $(PG_SRCS:.cpp=.o) $(DISPATCHER_SRCS:.cpp=.o)

PG_CPPFLAGS = -I$(srcdir)/src
PG_CXXFLAGS = -std=c++17 -Wno-register -Wno-missing-field-initializers -fno-omit-frame-pointer
SHLIB_LINK += -lstdc++

REGRESS = $(patsubst test/regress/sql/%.sql,%,$(sort $(wildcard test/regress/sql/*.sql)))
REGRESS_OPTS = --encoding=UTF8 --inputdir=test/regress --outputdir=test/regress --temp-instance=test/regress/tmp_check \
               --temp-config=test/regress.conf
ISOLATION = $(patsubst test/isolation/specs/%.spec,%,$(sort $(wildcard test/isolation/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test/isolation --outputdir=test/isolation --temp-instance=test/isolation/tmp_check \
                 --temp-config=test/isolation.conf
TAP_TESTS = 1
PROVE_TESTS = test/crash/*.pl test/wakeups/*.pl test/hooks/*.pl test/security/*.pl test/memory/*.pl

EXTRA_CLEAN = test/regress/results test/regress/regression.* test/regress/tmp_check test/regress/log \
              test/isolation/output_iso test/isolation/tmp_check test/isolation/log test/unit/run tmp_check

PG_CONFIG ?= /usr/lib/postgresql/15/bin/pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild everything when a header changes.
$(OBJS): $(wildcard src/*/*.hpp)

# The JIT bitcode of each .cpp is built by clang with BITCODE_CXXFLAGS only.
BITCODE_CXXFLAGS += -std=c++17 -Wno-register -I$(srcdir)/src

# Pure C++ unit tests: src/core and test/unit only, no PostgreSQL headers.
UNIT_CXXFLAGS = -std=c++17 -O1 -g -Wall -Wextra -Werror -I$(srcdir)/src
test/unit/run: $(CORE_SRCS) $(wildcard src/core/*.hpp) $(wildcard test/unit/*.cpp) $(wildcard test/unit/*.hpp)
	$(CXX) $(UNIT_CXXFLAGS) -o $@ $(CORE_SRCS) $(wildcard test/unit/*.cpp)

.PHONY: unit
unit: test/unit/run
	test/unit/run

# Client programs (libpq): the stress tests and the benchmark driver.
CLIENT_CXXFLAGS = -std=c++17 -O2 -g -Wall -Wextra -pthread -I$(shell $(PG_CONFIG) --includedir)
CLIENT_LIBS = -L$(shell $(PG_CONFIG) --libdir) -lpq
test/stress/bin/%: test/stress/%.cpp test/stress/*.hpp support/*.hpp
	@mkdir -p $(dir $@)
	$(CXX) $(CLIENT_CXXFLAGS) -o $@ $< $(CLIENT_LIBS)
bench/bin/%: bench/%.cpp support/*.hpp
	@mkdir -p $(dir $@)
	$(CXX) $(CLIENT_CXXFLAGS) -o $@ $< $(CLIENT_LIBS)

.PHONY: clients
clients: test/stress/bin/timeline test/stress/bin/stress
