/* Placeholder: to be written (owner noted in the commit). */
#include "common.h"

