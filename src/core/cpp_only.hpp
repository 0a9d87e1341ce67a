// Included first by every header in src/core: a pure C++ translation unit must
// not see PostgreSQL headers (their ERROR/LOG/Min/Max macros break C++ code,
// and core code must stay testable without a server).
#pragma once

#ifdef POSTGRES_H
#error "src/core is pure C++: include core headers before postgres.h, and never include PostgreSQL headers here"
#endif
