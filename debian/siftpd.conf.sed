# siftpd.conf.sed -- turns the installed configuration into the package's:
# the workers run as the system user "siftpd" that postinst creates, and the
# snippets of the siftpd-mod-* packages are included before any block.
s/^user .*;$/user              siftpd siftpd;/
/^user /a\
\
# one snippet per installed siftpd-mod-* package: load_module FILE;\
include           /etc/siftpd/modules-enabled/*.conf;
