#ifndef CANOPY_AGREE_H
#define CANOPY_AGREE_H
#endif
