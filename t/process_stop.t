#!/usr/bin/perl

# process_stop.t -- a fast stop (-s stop, SIGTERM) lets the workers abort
# their transfers and remove the temporary upload files before they exit,
# within the deadline, not killed at once; so does a single process.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use POSIX qw/:sys_wait_h/;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_upload_start/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

ftp_conf($t);
ftp_user($t, 'alice', 'pw-a', 'list,upload,overwrite');

sub temp_files {
    opendir my $dh, "$d/data/alice" or return ();
    my @f = grep { /\.sft-/ } readdir $dh;
    closedir $dh;
    return @f;
}

# master_process off: the same, in the one process

my $single = $t->read_file('siftpd.conf');
$single =~ s/^worker_processes.*$/master_process off;/m or die;
$t->write_file('single.conf', $single);

for my $how ('-s stop', 'SIGTERM', 'single SIGTERM') {
    my $seen = length($t->read_file('error.log'));
    $t->run($how =~ /single/ ? 'single.conf' : 'siftpd.conf');

    my @up = ftp_upload_start(port(8021), 'alice', 'pw-a', 'up.bin',
        'x' x 65536);
    ok($t->wait_for(sub { scalar(temp_files()) == 1 }),
        "$how: upload running into a temporary file");

    my $pid = $t->pid();

    if ($how =~ /SIGTERM/) {
        kill 'TERM', $pid;
    } else {
        my ($rc, $out) = $t->siftpd('-c', "$d/siftpd.conf", '-s', 'stop');
        is($rc, 0, "$how: sent") or diag($out);
    }

    ok($t->wait_for(sub { waitpid($pid, WNOHANG) == $pid }, 30),
        "$how: master exited");
    delete $t->{_pid};

    my $log = substr($t->read_file('error.log'), $seen);
    unlike($log, qr/did not (stop|close) in time/, "$how: workers not killed");
    unlike($log, qr/exited on signal 9/, "$how: no SIGKILL");
    is(join(' ', temp_files()), '', "$how: temporary file removed");
    ok(!-e "$d/data/alice/up.bin", "$how: aborted upload not committed");

    @up = ();
}

$t->done();
