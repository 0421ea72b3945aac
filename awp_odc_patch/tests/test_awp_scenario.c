/*
 * Scenario files the parser and the check must refuse, each with a message
 * naming the problem; and good ones they must accept. Then the snapshot
 * titles' times. No MPI: the parser and the check are local.
 *
 *   test_awp_scenario FOLDER   (a writable folder for the files)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awp_error.h"
#include "awp_output.h"
#include "awp_scenario.h"

/* A valid scenario; each case replaces or removes one of its lines. */
static const char *const good[] = {
    "grid = 24 24 24", "h = 100", "dt = 0.01", "steps = 10",
    "media = homogeneous 3000 1700 2400", "source = 12 12 12",
    "moment = 1 1 1 0 0 0", "stf = brune 0.05", "receivers = 1 2 3; 20 20 20",
    "proc = auto", "sponge = 8 0.92",
};
#define NGOOD ((int)(sizeof(good) / sizeof(good[0])))

/* Longer than the parsers' lines (4096 bytes, 512 in a layers file),
 * filled in by fill_long_texts. */
static char long_line[5000], long_override[4200], long_layers[700];
/* One receiver and one snapshot step more than the limits (64 each). */
static char many_receivers[64 * 8 + 32], many_snapshots[64 * 2 + 32];

typedef struct {
    const char *what;
    const char *line;     /* the replacement; NULL: the line is left out */
    int replaces;         /* index in good[] */
    int nranks;
    const char *needle;   /* what the message must contain; NULL: must pass */
    const char *override[2]; /* key=value given beside the file, or NULL */
} case_t;

static const case_t cases[] = {
    {"valid", "grid = 24 24 24", 0, 8, NULL, {NULL}},
    {"layers from a file", "media = layers layers.txt", 4, 1, NULL, {NULL}},
    {"missing key", NULL, 2, 1, "missing key 'dt'", {NULL}},
    {"negative spacing", "h = -100", 1, 1, "h: must be positive, not -100", {NULL}},
    {"zero spacing", "h = 0", 1, 1, "h: must be positive", {NULL}},
    {"source outside the grid", "source = 12 30 12", 5, 1,
     "source: cell 12 30 12 lies outside the grid 24x24x24", {NULL}},
    {"negative source cell", "source = -1 0 0", 5, 1, "lies outside the grid", {NULL}},
    {"receiver outside the grid", "receivers = 1 2 3; 20 24 20", 8, 1,
     "receiver 2 at cell 20 24 20 lies outside", {NULL}},
    {"grid not divisible", "proc = 5 1 1", 9, 5,
     "nx = 24 does not divide evenly over 5 ranks along x", {NULL}},
    {"process grid against the ranks", "proc = 2 2 1", 9, 2, "needs 4 ranks, but 2 are running",
     {NULL}},
    {"auto without an even split", "grid = 25 25 25", 0, 2,
     "no process grid of 2 ranks divides the grid 25x25x25", {NULL}},
    {"unstable", "dt = 0.02", 2, 1, "unstable: vp_max * dt / h", {NULL}},
    {"unknown mode", "mode = carrier-pigeon", 9, 1, "unknown mode 'carrier-pigeon'", {NULL}},
    {"the benchmark's reference mode", "mode = empty", 9, 1,
     "'empty' is awp_bench's timing reference", {NULL}},
    {"unknown key", "colour = blue", 9, 1, "unknown key 'colour'", {NULL}},
    {"unknown denormals choice", "grid = 24 24 24", 0, 1,
     "denormals: expected flush or keep, got 'zero'", {"denormals=zero"}},
    {"denormals kept", "grid = 24 24 24", 0, 1, NULL, {"denormals=keep"}},
    {"not key = value", "grid 24 24 24", 0, 1, "expected 'key = value'", {NULL}},
    {"malformed number", "steps = ten", 3, 1, "steps: expected 1 integer", {NULL}},
    {"fractional count", "grid = 24 24 24.5", 0, 1, "grid: expected 'nx ny nz'", {NULL}},
    {"vp too low for vs", "media = homogeneous 2000 1700 2400", 4, 1,
     "vp = 2000 must exceed sqrt(2) vs", {NULL}},
    /* vp^2 would pass the vs test, and a negative vp_max the stability limit */
    {"negative vp", "media = homogeneous -30000 1700 2400", 4, 1,
     "vp, vs and rho must be positive", {NULL}},
    {"infinite layer value", "media = layers bad_layers.txt", 4, 1,
     "bad_layers.txt:2: expected 'top_depth vp vs rho', got '500 3000 1700 1e999'", {NULL}},
    {"empty name", "name =", 9, 1, "name: a word of at most", {NULL}},
    {"numbers run together", "moment = 1 1 1 0 0.5.5", 6, 1, "moment: expected", {NULL}},
    /* 3 * 715827883 * 2 wraps to 2 in an int */
    {"process grid product overflow", "proc = 3 715827883 2", 9, 2, "1..2 allowed", {NULL}},
    {"fewer cells per rank than the ghost width", "grid = 24 24 24", 0, 24,
     "leaves 1 cells per rank; at least 2 needed", {"proc=1 1 24"}},
    {"missing layers file", "media = layers nowhere.txt", 4, 1,
     "cannot read layers file", {NULL}},
    {"unknown source-time function", "stf = boxcar 1", 7, 1, "stf: expected 'gaussian F0'",
     {NULL}},
    {"duplicate key", "h = 100", 0, 1, "key 'h' given twice", {NULL}},
    {"bad override", "grid = 24 24 24", 0, 1, "override 'h=-3': h: must be positive", {"h=-3"}},
    {"unstable by override", "grid = 24 24 24", 0, 1, "unstable", {"dt=0.05"}},
    {"key overridden twice", "grid = 24 24 24", 0, 1, "override 'h = 50': key 'h' overridden twice",
     {"h=200", "h = 50"}},
    {"the widest sponge", "sponge = 11 0.92", 10, 1, NULL, {NULL}},
    {"sponge wider than half the grid", "sponge = 12 0.92", 10, 1,
     "sponge: 12 cells on both sides leave no undamped cell in the 24 along x; at most 11", {NULL}},
    {"sponge as deep as the grid", "grid = 64 64 24", 0, 1,
     "sponge: 24 cells on the bottom leave no undamped cell in the 24 along z; at most 23",
     {"sponge=24 0.92"}},
    /* the exact limit is 6 / (7 sqrt(3)) = 0.49487: 0.497 blows up */
    {"just above the exact stability limit", "dt = 0.01657", 2, 1,
     "= 0.4971 (the Courant number) must be below 0.4949 = 1 / (sqrt(3) (|c1| + |c2|)), the "
     "limit of the 4th-order staggered scheme in 3D; dt must be below 0.016495", {NULL}},
    {"just below the exact stability limit", "dt = 0.016495", 2, 1, NULL, {NULL}},
    /* 4194304^3 * 4 bytes wraps to 0 in a 64-bit size_t */
    {"arrays beyond size_t", "grid = 4194300 4194300 4194300", 0, 1,
     "grid: 4194300x4194300x4194300 cells over 1x1x1 ranks: a block of "
     "4194300x4194300x4194300 cells and its ghosts has more bytes per array than size_t counts",
     {NULL}},
    {"mxz at k = 0 under the free surface", "moment = 1 1 1 0 0.5 0", 6, 1,
     "source: at k = 0 under the free surface, mxz = 0.5 and myz = 0 would be lost (the surface "
     "holds xz = yz = 0); put the source at k >= 1", {"source=12 12 0"}},
    {"k = 0 under the free surface without mxz, myz", "grid = 24 24 24", 0, 1, NULL,
     {"source=12 12 0"}},
    {"mxz at k = 0 without a free surface", "moment = 1 1 1 0 0.5 0", 6, 1, NULL,
     {"source=12 12 0", "freesurface=0"}},
    {"line longer than the buffer", long_line, 9, 1,
     "awp_case.txt:11: line longer than 4095 characters", {NULL}},
    {"override longer than the buffer", "grid = 24 24 24", 0, 1,
     "...': longer than 4095 characters", {long_override}},
    {"hexadecimal count", "grid = 0xc 24 24", 0, 1, "grid: expected 'nx ny nz', got '0xc 24 24'",
     {NULL}},
    {"hexadecimal float", "h = 0x1.9p6", 1, 1, "h: expected 1 number, got '0x1.9p6'", {NULL}},
    {"infinity", "m0 = infinity", 9, 1, "m0: expected 1 number, got 'infinity'", {NULL}},
    {"not a number", "dt = nan", 2, 1, "dt: expected 1 number, got 'nan'", {NULL}},
    {"no blank after homogeneous", "media = homogeneous3000 1700 2400", 4, 1,
     "media: expected 'homogeneous vp vs rho' or 'layers FILE', got 'homogeneous3000", {NULL}},
    {"no blank after layers", "media = layerslayers.txt x", 4, 1,
     "media: expected 'homogeneous vp vs rho' or 'layers FILE', got 'layerslayers.txt x'",
     {NULL}},
    {"no blank after the plane's axis", "grid = 24 24 24", 0, 1,
     "snapshot_plane: expected 'x|y|z index', got 'y6'", {"snapshot_plane=y6"}},
    {"hexadecimal in a layers file", "media = layers hex_layers.txt", 4, 1,
     "hex_layers.txt:2: expected 'top_depth vp vs rho', got '0x1f4 3000 1700 2400'", {NULL}},
    {"line longer than the layers file's buffer", "media = layers long_layers.txt", 4, 1,
     "long_layers.txt:1: line longer than 511 characters", {NULL}},
    {"a grid without cells along y", "grid = 24 0 24", 0, 1,
     "grid: cell counts must be positive, got '24 0 24'", {NULL}},
    {"negative steps", "steps = -1", 3, 1, "steps: must be >= 0, not -1", {NULL}},
    {"homogeneous without rho", "media = homogeneous 3000 1700", 4, 1,
     "media: expected 'homogeneous vp vs rho', got 'homogeneous 3000 1700'", {NULL}},
    {"free surface neither 0 nor 1", "grid = 24 24 24", 0, 1,
     "freesurface: expected 0 or 1, got 'yes'", {"freesurface=yes"}},
    {"negative sponge width", "sponge = -1 0.92", 10, 1,
     "sponge: expected 'nd arbc' (nd cells >= 0), got '-1 0.92'", {NULL}},
    {"sponge factor of 1", "sponge = 8 1", 10, 1, "sponge: arbc must lie in (0, 1), not 1",
     {NULL}},
    {"source with two coordinates", "source = 12 12", 5, 1,
     "source: expected the source cell 'i j k', got '12 12'", {NULL}},
    {"receiver with two coordinates", "receivers = 1 2 3; 4 5", 8, 1,
     "receivers: expected cells 'i j k' separated by ';', got ' 4 5'", {NULL}},
    {"65 receivers", many_receivers, 8, 1, "receivers: more than 64 receivers", {NULL}},
    {"no ranks along x", "proc = 0 1 1", 9, 1,
     "proc: expected 'auto' or 'px py pz' (each >= 1), got '0 1 1'", {NULL}},
    {"snapshots and a plane chosen", "grid = 24 24 24", 0, 1, NULL,
     {"snapshots=1 10", "snapshot_plane=z 23"}},
    {"snapshot at step 0", "grid = 24 24 24", 0, 1, "snapshots: steps count from 1, got 0",
     {"snapshots=0 5"}},
    {"snapshot after the last step", "grid = 24 24 24", 0, 1,
     "snapshots: step 11 lies after the last step 10", {"snapshots=5 11"}},
    {"65 snapshots", many_snapshots, 9, 1, "snapshots: more than 64 steps", {NULL}},
    {"snapshot plane outside the grid", "grid = 24 24 24", 0, 1,
     "snapshot_plane: index 24 lies outside 0..23", {"snapshot_plane=z 24"}},
    {"unknown snapshot field", "grid = 24 24 24", 0, 1,
     "snapshot_field: unknown field 'p' (u1 v1 w1 xx yy zz xy xz yz)", {"snapshot_field=p"}},
    {"a stress snapshot", "grid = 24 24 24", 0, 1, NULL, {"snapshot_field=xy", "snapshots=3"}},
    {"empty output folder", "grid = 24 24 24", 0, 1, "output: expected a folder name",
     {"output="}},
    {"negative progress", "grid = 24 24 24", 0, 1, "progress: must be >= 0, not -5",
     {"progress=-5"}},
    {"progress as a word", "grid = 24 24 24", 0, 1,
     "progress: expected 'auto' or a number of steps, got 'often'", {"progress=often"}},
    /* 3.0 as a double */
    {"a fraction that rounds to an integer", "steps = 2.9999999999999999", 3, 1,
     "steps: expected integers, got '2.9999999999999999'", {NULL}},
    /* an old Mac line break would join the two layers into one line */
    {"carriage return inside a layers line", "media = layers cr_layers.txt", 4, 1,
     "cr_layers.txt:1: a carriage return inside the line", {NULL}},
    {"layers file with CRLF line ends", "media = layers crlf_layers.txt", 4, 1, NULL, {NULL}},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

static int write_case(const char *path, const case_t *c)
{
    FILE *f = fopen(path, "w");
    int i;
    if (f == NULL)
        return -1;
    fprintf(f, "# test case: %s\n", c->what);
    for (i = 0; i < NGOOD; i++)
        if (i != c->replaces)
            fprintf(f, "%s\n", good[i]);
        else if (c->line != NULL)
            fprintf(f, "%s\n", c->line);
    if (strcmp(c->what, "duplicate key") == 0)
        fprintf(f, "h = 100\n");
    return fclose(f);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        return -1;
    }
    return 0;
}

/* Writes the layers files of the cases into folder, or removes them. */
static int layers_files(const char *folder, int remove_them)
{
    static const char *const files[][2] = {
        {"layers.txt", "0 2000 1000 2200\n500 3000 1700 2400\n"},
        {"bad_layers.txt", "0 2000 1000 2200\n500 3000 1700 1e999\n"},
        {"hex_layers.txt", "0 2000 1000 2200\n0x1f4 3000 1700 2400\n"},
        {"long_layers.txt", long_layers},
        {"cr_layers.txt", "0 2000 1000 2200\r500 3000 1700 2400\n"},
        {"crlf_layers.txt", "0 2000 1000 2200\r\n500 3000 1700 2400\r\n"},
    };
    size_t i;
    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", folder, files[i][0]);
        if (remove_them)
            remove(path);
        else if (write_file(path, files[i][1]) != 0)
            return -1;
    }
    return 0;
}

/* Lines with a comment that runs on past the buffer (its tail, read as a
 * line of its own, would fail with another message), and a list of
 * receivers that a cut would silently shorten to its first. */
static void fill_long_texts(void)
{
    int i;
    size_t n = (size_t)snprintf(long_line, sizeof(long_line), "proc = auto # ");
    memset(long_line + n, 'x', sizeof(long_line) - n - 1);
    n = (size_t)snprintf(long_layers, sizeof(long_layers), "0 2000 1000 2200 # ");
    memset(long_layers + n, 'x', sizeof(long_layers) - n - 2);
    long_layers[sizeof(long_layers) - 2] = '\n';
    n = (size_t)snprintf(long_override, sizeof(long_override), "receivers=1 2 3");
    memset(long_override + n, ' ', sizeof(long_override) - n - 1);
    strcpy(long_override + sizeof(long_override) - 12, "; 20 20 20");
    n = (size_t)snprintf(many_receivers, sizeof(many_receivers), "receivers = 1 1 1");
    for (i = 1; i < 65; i++)
        n += (size_t)snprintf(many_receivers + n, sizeof(many_receivers) - n, "; 1 1 1");
    n = (size_t)snprintf(many_snapshots, sizeof(many_snapshots), "snapshots =");
    for (i = 0; i < 65; i++)
        n += (size_t)snprintf(many_snapshots + n, sizeof(many_snapshots) - n, " 1");
}

/* The snapshot titles give the time the field holds: the velocities of a
 * step half a step before its stresses (leapfrog). */
static int check_titles(void)
{
    static const struct {
        awp_field_t field;
        const char *time;
    } want[] = {{AWP_W1, "step 10 (t = 0.095 s)"}, {AWP_XX, "step 10 (t = 0.100 s)"}};
    static awp_scenario_t sc;
    char title[256];
    int i, failed = 0;
    awp_scenario_defaults(&sc, "titles");
    sc.dt = 0.01;
    sc.snap_axis = 1;
    for (i = 0; i < 2; i++) {
        sc.snap_field = want[i].field;
        awp_slice_title(&sc, 10, title, sizeof(title));
        if (strstr(title, want[i].time) == NULL) {
            printf("FAIL snapshot title of %s: '%s', expected \"%s\"\n",
                   awp_field_name(want[i].field), title, want[i].time);
            failed++;
        } else
            printf("ok   snapshot title of %s: %s\n", awp_field_name(want[i].field), title);
    }
    return failed;
}

/* 1 and a line saying why where rc is not a refusal naming needle. */
static int refused(const char *what, int rc, const char *needle)
{
    if (rc == 0 || strstr(awp_last_error(), needle) == NULL) {
        printf("FAIL %s: %s, expected \"%s\"\n", what, rc == 0 ? "accepted" : awp_last_error(),
               needle);
        return 1;
    }
    printf("ok   %s: %s\n", what, awp_last_error());
    return 0;
}

/* What the line reader and the output's preparation refuse beyond the cases'
 * scenarios: a NUL byte (the string functions would not see past it), a
 * folder given as the scenario, an output that is a file, and an output
 * whose files' paths would be cut. */
static int check_files(const char *folder)
{
    static awp_scenario_t sc;
    char path[4096];
    const char nul[] = "steps = 3\0 junk\n";
    FILE *f;
    int failed = 0;

    snprintf(path, sizeof(path), "%s/awp_nul.txt", folder);
    f = fopen(path, "w");
    if (f == NULL || fwrite(nul, 1, sizeof(nul) - 1, f) != sizeof(nul) - 1 || fclose(f) != 0)
        return 1;
    failed += refused("a NUL byte in the scenario", awp_scenario_load(&sc, path, 0, NULL),
                      "awp_nul.txt:1: a NUL byte in the line");
    remove(path);
    failed += refused("a folder as the scenario", awp_scenario_load(&sc, folder, 0, NULL),
                      ": cannot read: Is a directory");

    awp_scenario_defaults(&sc, "t");
    if (snprintf(sc.output, sizeof(sc.output), "%s/awp_file", folder) >= (int)sizeof(sc.output) ||
        write_file(sc.output, "") != 0)
        return failed + 1;
    failed += refused("a file as the output folder", awp_output_prepare(&sc),
                      "awp_file is not a folder");
    remove(sc.output);
    memset(sc.output, 'd', sizeof(sc.output) - 1); /* 511 characters, a relative path */
    sc.output[sizeof(sc.output) - 1] = '\0';
    memset(sc.name, 'n', sizeof(sc.name) - 1);
    sc.name[sizeof(sc.name) - 1] = '\0';
    failed += refused("an output whose files' paths would be cut", awp_output_prepare(&sc),
                      "output and name: the files' paths would take");
    return failed;
}

int main(int argc, char **argv)
{
    char path[4096];
    int i, failed;
    if (argc != 2) {
        fprintf(stderr, "usage: test_awp_scenario FOLDER\n");
        return 2;
    }
    snprintf(path, sizeof(path), "%s/awp_case.txt", argv[1]);
    fill_long_texts();
    if (layers_files(argv[1], 0) != 0)
        return 1;
    failed = check_titles() + check_files(argv[1]);
    for (i = 0; i < NCASES; i++) {
        const case_t *c = &cases[i];
        static awp_scenario_t sc;
        char *over[2] = {(char *)c->override[0], (char *)c->override[1]};
        int rc;
        if (write_case(path, c) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        rc = awp_scenario_load(&sc, path, (c->override[0] != NULL) + (c->override[1] != NULL),
                               over);
        if (rc == 0)
            rc = awp_scenario_check(&sc, c->nranks);
        if (c->needle == NULL && rc != 0) {
            printf("FAIL %s: refused: %s\n", c->what, awp_last_error());
            failed++;
        } else if (c->needle != NULL && (rc == 0 || strstr(awp_last_error(), c->needle) == NULL)) {
            printf("FAIL %s: %s, expected a message with \"%s\"\n", c->what,
                   rc == 0 ? "accepted" : awp_last_error(), c->needle);
            failed++;
        } else
            printf("ok   %s: %s\n", c->what, rc == 0 ? "accepted" : awp_last_error());
    }
    remove(path);
    layers_files(argv[1], 1);
    printf("test_awp_scenario: %s (%d of %d cases, titles and files failed)\n",
           failed ? "FAIL" : "PASS", failed, NCASES + 6);
    return failed ? 1 : 0;
}
