/*
 * Runtime options: one parser by name shared by the environment overlay (CANOPY_<NAME>) and by
 * canopy-solve's flags (--<name>), so the three spellings can never drift apart.
 */
#ifndef CANOPY_OPTIONS_H
#define CANOPY_OPTIONS_H

#include "base/common.h"

/** Check the consistency of a whole options struct (ranges, enum values). */
canopy_status options_validate(const canopy_options *o, canopy_err *err);

/** Names accepted by canopy_options_set, NULL-terminated (for help texts and the env overlay). */
extern const char *const options_names[];

#endif
