# written by setup.py: the libcanopy this package was installed against
LIBRARY = '/tmp/tmp.nOSn2rP2tN/root/usr/local/lib/libcanopy.so'
