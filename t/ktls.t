#!/usr/bin/perl

# ktls.t -- FTPS downloads through kernel TLS. Machines without the tls
# ULP (this one's kernel has no CONFIG_TLS) never reach that path, so this
# boots Debian's own kernel, which has it, under qemu (no KVM needed),
# with the host's root file system shared read-only over 9p, a tmpfs on
# /tmp and this tree shared again at its own path (it may be below /tmp),
# and runs t/ftps_records.t there with the same siftpd binary:
# every download must be sealed by the kernel (path="ktls", files going
# out with sendfile(2)) and arrive byte for byte. The kernel package is
# fetched by auto/deps into /var/cache/siftp-tests; without it, qemu or
# a static busybox the test is skipped.

use warnings;
use strict;

use lib 't/lib';
use Cwd qw/getcwd/;
use File::Path qw/make_path/;
use POSIX qw/:sys_wait_h/;
use Test::More;
use Test::Siftpd;

my $CACHE = $ENV{SIFTP_TEST_CACHE} || '/var/cache/siftp-tests';
my $BOOT_TIMEOUT = 900;     # the guest's whole run, TCG-emulated

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'inside the kTLS guest') if $ENV{SIFTP_KTLS_GUEST};
plan(skip_all => 'x86_64 only') unless `uname -m` =~ /^x86_64/;

my ($deb) = sort glob("$CACHE/linux-image-*-amd64_*.deb");
plan(skip_all => "no kernel package in $CACHE (auto/deps)") unless $deb;

for my $tool (qw/qemu-system-x86_64 dpkg-deb/) {
    plan(skip_all => "no $tool")
        unless system("command -v $tool >/dev/null") == 0;
}

my $busybox = `sh -c 'command -v busybox'` =~ s/\s+$//r;
plan(skip_all => 'no static busybox (busybox-static)')
    unless $busybox && `ldd $busybox 2>&1` =~ /not a dynamic executable/;

# the kernel and the modules: virtio and 9p for the root, AEADs and tls

system('dpkg-deb', '-x', $deb, "$d/k") == 0 or die "dpkg-deb -x $deb";

my ($vmlinuz) = glob("$d/k/boot/vmlinuz-*");
my ($moddir) = glob("$d/k/lib/modules/*");
die "no vmlinuz or modules in $deb" unless $vmlinuz && $moddir;

my %path;
open(my $find, '-|', 'find', $moddir, '-name', '*.ko') or die "find: $!";
while (my $f = <$find>) {
    chomp $f;
    (my $name = $f) =~ s{.*/|\.ko$}{}g;
    $name =~ tr/-/_/;
    $path{$name} = $f;
}
close $find;

sub depends {
    my ($name) = @_;
    open(my $fh, '<:raw', $path{$name}) or die "$path{$name}: $!";
    local $/;
    my $ko = <$fh>;
    return $ko =~ /\0depends=([^\0]*)\0/ ? grep { length } split(/,/, $1) : ();
}

# the load order: each module after what it depends on
my (@order, %seen);
sub want {
    my ($name) = @_;
    $name =~ tr/-/_/;
    return if $seen{$name}++;
    die "no module $name in $deb" unless $path{$name};
    want($_) for depends($name);
    push @order, $name;
}
want($_) for qw/virtio_pci 9pnet_virtio 9p gcm ctr ghash_generic aesni_intel
                chacha20poly1305 chacha_generic chacha_x86_64 poly1305_generic
                poly1305_x86_64 tls/;

make_path("$d/initrd/bin", "$d/initrd/mods", map { "$d/initrd/$_" }
    qw/proc sys dev host/);
system('cp', '-L', $busybox, "$d/initrd/bin/busybox") == 0 or die 'cp busybox';
for my $m (@order) {
    system('cp', $path{$m}, "$d/initrd/mods/$m.ko") == 0 or die "cp $m";
}

my $cwd = getcwd();
my $binary = $t->binary();
my ($path, $home) = ($ENV{PATH}, $ENV{HOME} // '/tmp');

open(my $init, '>', "$d/initrd/init") or die "init: $!";
print $init <<"EOF";
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in @order; do insmod /mods/\$m.ko || echo "KTLS: insmod \$m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 host /host \\
    || echo "KTLS: no 9p root"
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev; mkdir -p /host/dev/shm /host/dev/pts
mount -t tmpfs tmp /host/tmp; mount -t tmpfs shm /host/dev/shm
mount -t tmpfs run /host/run
mkdir -p '/host$cwd'
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 repo '/host$cwd' \\
    || echo "KTLS: no 9p repo"
cp /guest.sh /host/tmp/guest.sh
chroot /host /bin/sh /tmp/guest.sh
poweroff -f
EOF
close $init;
chmod 0755, "$d/initrd/init" or die "chmod init: $!";

open(my $guest, '>', "$d/initrd/guest.sh") or die "guest.sh: $!";
print $guest <<"EOF";
export PATH='$path' HOME='$home' SIFTP_KTLS_GUEST=1 TEST_SIFTPD_BINARY='$binary'
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
echo "KTLS: ulp \$(cat /proc/sys/net/ipv4/tcp_available_ulp)"
cd '$cwd' && prove -v t/ftps_records.t 2>&1 | sed 's/^/KTLS: /'
echo "KTLS: done"
EOF
close $guest;

system("cd $d/initrd && find . | busybox cpio -o -H newc 2>/dev/null "
    . "| gzip > $d/initrd.gz") == 0 or die 'cpio';

# boot; the guest powers off when its prove is done

my $pid = fork() // die "fork: $!";
if ($pid == 0) {
    open(STDIN, '<', '/dev/null') or die;
    open(STDOUT, '>', "$d/console") or die;
    open(STDERR, '>&', \*STDOUT) or die;
    exec('qemu-system-x86_64', '-M', 'q35', '-cpu', 'max', '-smp', '2',
        '-m', '2048', '-nographic', '-no-reboot', '-nic', 'none',
        '-kernel', $vmlinuz, '-initrd', "$d/initrd.gz",
        '-append', 'console=ttyS0 quiet panic=-1',
        '-virtfs', 'local,path=/,mount_tag=host,security_model=none,'
            . 'readonly=on,multidevs=remap',
        '-virtfs', "local,path=$cwd,mount_tag=repo,security_model=none,"
            . 'readonly=on,multidevs=remap');
    die "exec qemu: $!";
}

my $deadline = time() + $BOOT_TIMEOUT;
while (waitpid($pid, WNOHANG) == 0 && time() < $deadline) {
    sleep 1;
}
if (waitpid($pid, WNOHANG) == 0) {
    kill 'KILL', $pid;
    waitpid($pid, 0);
    fail("the guest finished within $BOOT_TIMEOUT s");
}

open(my $fh, '<', "$d/console") or die "console: $!";
my $out = join('', map { s/\r//gr =~ s/^.*?KTLS: //r } grep { /KTLS: / } <$fh>);
close $fh;

like($out, qr/^ulp .*\btls\b/m, 'the guest kernel has the tls ULP')
    or diag($out);
ok($out =~ /^ulp /m && $out !~ /insmod|no 9p/, 'modules loaded, root shared');
like($out, qr/^Result: PASS$/m, 't/ftps_records.t passes under kTLS')
    or diag($out);
like($out, qr/^# sealed by the kernel: 49, by siftpd: 0$/m,
    'every download sealed by the kernel') or diag($out);
like($out, qr/^done$/m, 'the guest ran to its end');

done_testing();
