#ifndef CUCO_VERSION_H
#define CUCO_VERSION_H
#define CUCO_VERSION "0.1.0"
#endif
