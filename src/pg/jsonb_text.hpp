// zizq boundary: jsonb <-> the text core code parses and produces.
#pragma once

#include "pg/pg.hpp"

namespace zizq::pg {

// The jsonb value as palloc'd JSON text.
char *jsonb_text(Jsonb *jb);
char *jsonb_datum_text(Datum d);
// Parses JSON text produced by core (always valid JSON) into jsonb.
Datum jsonb_from_text(const char *text);

}  // namespace zizq::pg
