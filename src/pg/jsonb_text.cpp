// zizq boundary: jsonb <-> text (see jsonb_text.hpp).
#include "pg/jsonb_text.hpp"

namespace zizq::pg {

char *jsonb_text(Jsonb *jb) { return JsonbToCString(nullptr, &jb->root, VARSIZE(jb)); }

char *jsonb_datum_text(Datum d) { return jsonb_text(DatumGetJsonbP(d)); }

Datum jsonb_from_text(const char *text) { return DirectFunctionCall1(jsonb_in, CStringGetDatum(text)); }

}  // namespace zizq::pg
