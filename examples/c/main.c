/*
 * throng from C: a crowd of the built-in humanoid on a state graph loaded from JSON, stepped
 * for two seconds and evaluated on the CPU, with the matrices, root motion, states and error
 * reporting checked along the way; then, given a glTF file, the same for its skin and first
 * clip. Exits 0 when every check holds, 1 otherwise.
 *
 * Build (docs/capi.md):
 *   cargo rustc --release --lib --features capi --crate-type staticlib --target-dir target/capi
 *   cc -std=c11 -Wall -Wextra examples/c/main.c -Iinclude target/capi/release/libthrong.a \
 *      -lm -lpthread -ldl -o target/capi/throng_c_example
 *   target/capi/throng_c_example src/demo/locomotion.json [../shared/data/gltf/RiggedSimple/RiggedSimple.gltf]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "throng.h"

enum { NUM_CHARACTERS = 8, FRAMES = 120, JUMP_FRAME = 30 };
static const float DT_S = 1.0f / 60.0f;

static int failures = 0;

/* Reports a failed check and carries on, so one run lists every problem. */
static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

/* Runs a call that must succeed; on failure prints the status and message and exits. */
static void must(ThrongStatus status, const char *what) {
    if (status != THRONG_STATUS_OK) {
        fprintf(stderr, "FAIL: %s: %s: %s\n", what, throng_status_name(status), throng_last_error_message());
        exit(1);
    }
}

/* A call that must fail with `expected` and say why. */
static void must_fail(ThrongStatus status, ThrongStatus expected, const char *what) {
    const char *message = throng_last_error_message();
    if (status != expected || message[0] == '\0') {
        fprintf(stderr, "FAIL: %s: expected %s with a message, got %s (\"%s\")\n", what, throng_status_name(expected),
                throng_status_name(status), message);
        failures++;
    } else {
        printf("refused as expected: %s -> %s: %s\n", what, throng_status_name(status), message);
    }
}

static char *read_file(const char *path, size_t *out_len) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        return NULL;
    }
    char *bytes = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            char *grown = realloc(bytes, cap);
            if (grown == NULL) {
                free(bytes);
                fclose(file);
                return NULL;
            }
            bytes = grown;
        }
        got = fread(bytes + len, 1, cap - len, file);
        len += got;
    } while (got > 0);
    fclose(file);
    *out_len = len;
    return bytes;
}

/* A crowd of `count` 26-joint humanoids on `graph`, their archetype and handles. */
static ThrongCrowd *humanoid_crowd(const char *graph, size_t graph_len, size_t count, uint32_t *archetype, uint64_t *handles) {
    ThrongCharacter *humanoid = NULL;
    ThrongCrowd *crowd = NULL;
    must(throng_character_humanoid(26, &humanoid), "throng_character_humanoid");
    must(throng_crowd_create(&crowd), "throng_crowd_create");
    must(throng_crowd_add_archetype(crowd, humanoid, (const uint8_t *)graph, graph_len, archetype), "add_archetype");
    /* The crowd copied what it needs. */
    throng_character_destroy(humanoid);
    must(throng_crowd_spawn(crowd, *archetype, count, handles), "spawn");
    return crowd;
}

/* A crowd of the humanoid on the graph, with every character's parameters set. */
typedef struct Scene {
    ThrongCrowd *crowd;
    uint32_t archetype;
    uint64_t handles[NUM_CHARACTERS];
    uint32_t speed, jump;
} Scene;

static Scene make_scene(const char *json, size_t json_len) {
    Scene scene;
    scene.crowd = humanoid_crowd(json, json_len, NUM_CHARACTERS, &scene.archetype, scene.handles);
    must(throng_crowd_find_param(scene.crowd, scene.archetype, "speed", &scene.speed), "find speed");
    must(throng_crowd_find_param(scene.crowd, scene.archetype, "jump", &scene.jump), "find jump");
    /* 0 stands, 1 walks (1.5 m/s), 2 runs (4 m/s), 3 stands and jumps, the rest in between. */
    const float speeds[NUM_CHARACTERS] = {0.0f, 1.5f, 4.0f, 0.0f, 0.8f, 2.0f, 3.0f, 1.0f};
    must(throng_crowd_set_float(scene.crowd, scene.speed, scene.handles, speeds, NUM_CHARACTERS), "set speed");
    uint32_t wave;
    must(throng_crowd_find_param(scene.crowd, scene.archetype, "wave", &wave), "find wave");
    const float waves[2] = {1.0f, 1.0f};
    const uint64_t wavers[2] = {scene.handles[4], scene.handles[5]};
    must(throng_crowd_set_float(scene.crowd, wave, wavers, waves, 2), "set wave");
    return scene;
}

static int all_finite(const float *values, size_t count) {
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(values[i])) {
            return 0;
        }
    }
    return 1;
}

/* Column-major: element (row r, column c) of joint matrix m is m[c * 4 + r]. */
static int is_rigid(const float *m) {
    if (fabsf(m[3]) > 1e-6f || fabsf(m[7]) > 1e-6f || fabsf(m[11]) > 1e-6f || fabsf(m[15] - 1.0f) > 1e-6f) {
        return 0;
    }
    float det = m[0] * (m[5] * m[10] - m[9] * m[6]) - m[4] * (m[1] * m[10] - m[9] * m[2]) + m[8] * (m[1] * m[6] - m[5] * m[2]);
    return fabsf(det - 1.0f) < 1e-3f;
}

/* INTEGER and BOOLEAN parameters on a graph of its own: Idle -> Walk when mode == 2 and armed. */
static void int_and_bool_parameters(void) {
    static const char graph[] =
        "{\"layers\": [{\"name\": \"Base\", \"states\": [{\"name\": \"START\"}, {\"name\": \"Idle\"}, {\"name\": \"Walk\"}],"
        " \"transitions\": [{\"from\": \"START\", \"to\": \"Idle\"},"
        " {\"from\": \"Idle\", \"to\": \"Walk\", \"conditions\": ["
        "{\"parameterName\": \"mode\", \"predicate\": \"EQUAL_TO\", \"value\": 2},"
        " {\"parameterName\": \"armed\", \"predicate\": \"EQUAL_TO\", \"value\": true}]}]}],"
        " \"parameters\": {\"mode\": {\"name\": \"mode\", \"type\": \"INTEGER\", \"value\": 0},"
        " \"armed\": {\"name\": \"armed\", \"type\": \"BOOLEAN\", \"value\": false}}}";
    uint32_t archetype, mode, armed;
    uint64_t handles[3];
    ThrongCrowd *crowd = humanoid_crowd(graph, sizeof graph - 1, 3, &archetype, handles);
    must(throng_crowd_find_param(crowd, archetype, "mode", &mode), "find mode");
    must(throng_crowd_find_param(crowd, archetype, "armed", &armed), "find armed");
    const int32_t modes[3] = {2, 2, 1};
    const uint8_t armed_values[3] = {7, 0, 1}; /* any non-zero byte is true */
    must(throng_crowd_set_int(crowd, mode, handles, modes, 3), "set_int");
    must(throng_crowd_set_bool(crowd, armed, handles, armed_values, 3), "set_bool");
    must_fail(throng_crowd_set_int(crowd, armed, handles, modes, 3), THRONG_STATUS_STATE, "an integer for a BOOLEAN");
    must(throng_crowd_update(crowd, DT_S), "update");
    const char *states[3];
    for (int i = 0; i < 3; i++) {
        must(throng_crowd_active_state_name(crowd, handles[i], 0, &states[i]), "active_state_name");
    }
    printf("mode/armed: (2, 7) -> %s, (2, 0) -> %s, (1, 1) -> %s\n", states[0], states[1], states[2]);
    check(strcmp(states[0], "Walk") == 0 && strcmp(states[1], "Idle") == 0 && strcmp(states[2], "Idle") == 0,
          "INTEGER and BOOLEAN parameters drive the transition");
    throng_crowd_destroy(crowd);
}

/* A glTF character on a one-state graph that plays its first clip: the clip name comes from the
 * character, the graph is written here. */
static void gltf_character(const char *path) {
    ThrongCharacter *character = NULL;
    must(throng_character_from_gltf(path, THRONG_GLTF_MERGE_ANIMATIONS, &character), "throng_character_from_gltf");
    uint32_t joints = 0, clips = 0;
    must(throng_character_num_joints(character, &joints), "num_joints");
    must(throng_character_num_clips(character, &clips), "num_clips");
    check(clips == 1, "merging gives one clip");
    const char *clip = "";
    must(throng_character_clip_name(character, 0, &clip), "clip_name");
    char json[512];
    const char *format = "{\"layers\": [{\"name\": \"Base\", \"states\": [{\"name\": \"START\"}, {\"name\": \"%s\"}],"
                         " \"transitions\": [{\"from\": \"START\", \"to\": \"%s\"}]}], \"parameters\": {}}";
    int len = snprintf(json, sizeof json, format, clip, clip);
    check(len > 0 && (size_t)len < sizeof json, "the glTF graph fits its buffer");

    ThrongCrowd *crowd = NULL;
    uint32_t archetype = 0;
    must(throng_crowd_create(&crowd), "throng_crowd_create");
    /* A state whose name is no clip of the character cannot be bound. */
    char unbound[512];
    int unbound_len = snprintf(unbound, sizeof unbound, format, "NoSuchClip", "NoSuchClip");
    must_fail(throng_crowd_add_archetype(crowd, character, (const uint8_t *)unbound, (size_t)unbound_len, &archetype), THRONG_STATUS_BIND,
              "a state named after no clip");
    must(throng_crowd_add_archetype(crowd, character, (const uint8_t *)json, (size_t)len, &archetype), "add_archetype (glTF)");
    uint64_t handle;
    must(throng_crowd_spawn(crowd, archetype, 1, &handle), "spawn (glTF)");
    size_t floats = 0;
    must(throng_crowd_floats_needed(crowd, archetype, THRONG_LAYOUT_MAT4, &floats), "floats_needed (glTF)");
    check(floats == (size_t)joints * 16, "one character's matrices");
    float *first = malloc(floats * sizeof(float));
    float *later = malloc(floats * sizeof(float));
    if (first == NULL || later == NULL) {
        exit(2);
    }
    must(throng_crowd_update(crowd, DT_S), "update (glTF)");
    must(throng_crowd_evaluate(crowd, archetype, THRONG_LAYOUT_MAT4, first, floats, NULL, 0), "evaluate (glTF)");
    for (int frame = 0; frame < 30; frame++) {
        must(throng_crowd_update(crowd, DT_S), "update (glTF)");
        must(throng_crowd_evaluate(crowd, archetype, THRONG_LAYOUT_MAT4, later, floats, NULL, 0), "evaluate (glTF)");
    }
    float moved = 0.0f;
    for (size_t k = 0; k < floats; k++) {
        moved = fmaxf(moved, fabsf(later[k] - first[k]));
    }
    const char *state = "";
    must(throng_crowd_active_state_name(crowd, handle, 0, &state), "active_state_name (glTF)");
    printf("glTF: %u joints, clip \"%s\" playing in state %s, largest matrix change over 0.5 s %.3f\n", joints, clip, state, moved);
    check(all_finite(later, floats), "the glTF character's matrices are finite");
    check(moved > 1e-3f, "the glTF clip moves the skin");
    /* Last: `clip` belongs to the character. */
    throng_character_destroy(character);
    free(first);
    free(later);
    throng_crowd_destroy(crowd);
}

/* Animation events: footsteps on the walk clip fire for the walker, every loop, and never for
 * the character standing in Idle; bad events come back as errors. */
static void animation_events(const char *json, size_t json_len) {
    ThrongCharacter *humanoid = NULL;
    ThrongCrowd *crowd = NULL;
    must(throng_character_humanoid(26, &humanoid), "throng_character_humanoid");
    must(throng_character_add_clip_event(humanoid, "Walk", "footstep", 0.05f), "add_clip_event");
    must(throng_character_add_clip_event(humanoid, "walk", "footstep", 0.3f), "add_clip_event");
    must_fail(throng_character_add_clip_event(humanoid, "walk", "late", -1.0f), THRONG_STATUS_INVALID_ARGUMENT, "an event before its clip starts");
    must_fail(throng_character_add_clip_event(humanoid, "swim", "splash", 0.1f), THRONG_STATUS_UNKNOWN_NAME, "an event on a clip the character lacks");
    must(throng_crowd_create(&crowd), "throng_crowd_create");
    uint32_t archetype;
    must(throng_crowd_add_archetype(crowd, humanoid, (const uint8_t *)json, json_len, &archetype), "add_archetype");
    throng_character_destroy(humanoid);
    uint64_t handles[2];
    must(throng_crowd_spawn(crowd, archetype, 2, handles), "spawn");
    uint32_t speed;
    must(throng_crowd_find_param(crowd, archetype, "speed", &speed), "find speed");
    const float speeds[2] = {1.5f, 0.0f};
    must(throng_crowd_set_float(crowd, speed, handles, speeds, 2), "set speed");
    int steps[2] = {0, 0}, named = 1, weighted = 1;
    ThrongEvent events[16];
    for (int frame = 0; frame < FRAMES; frame++) {
        must(throng_crowd_update(crowd, DT_S), "update");
        size_t count = 0;
        must(throng_crowd_event_count(crowd, archetype, &count), "event_count");
        if (count > 16) {
            check(0, "at most a few events a frame");
            break;
        }
        must(throng_crowd_events(crowd, archetype, events, count), "events");
        for (size_t e = 0; e < count; e++) {
            const char *name = "";
            must(throng_crowd_event_name(crowd, archetype, events[e].event, &name), "event_name");
            named &= strcmp(name, "footstep") == 0;
            weighted &= events[e].weight > 0.0f && events[e].weight <= 1.0f;
            steps[events[e].character == handles[0] ? 0 : 1]++;
        }
    }
    printf("footsteps over %d frames: walker %d, idle character %d\n", FRAMES, steps[0], steps[1]);
    check(steps[0] >= 2 && steps[1] == 0, "the walker's footsteps fire every loop, the idle character's never");
    check(named && weighted, "events carry their name and a weight in (0, 1]");
    const char *past = "";
    must_fail(throng_crowd_event_name(crowd, archetype, 99, &past), THRONG_STATUS_INVALID_ARGUMENT, "an event index past the names");
    throng_crowd_destroy(crowd);
}

/* Animation LOD and cleared triggers, on two walkers: the one at rate 4 is evaluated on one
 * update in four and holds its pose between, the one at rate 1 on every update; a jump trigger
 * reset before the update never fires, one left set does. */
static void update_rates_and_reset_trigger(const char *json, size_t json_len) {
    uint32_t archetype, speed, jump;
    uint64_t handles[2];
    ThrongCrowd *crowd = humanoid_crowd(json, json_len, 2, &archetype, handles);
    must(throng_crowd_find_param(crowd, archetype, "speed", &speed), "find speed");
    must(throng_crowd_find_param(crowd, archetype, "jump", &jump), "find jump");
    const float speeds[2] = {1.5f, 1.5f};
    must(throng_crowd_set_float(crowd, speed, handles, speeds, 2), "set speed");
    /* Into the walk first: a switch (Idle -> Move) is evaluated whatever the rate. */
    for (int frame = 0; frame < 60; frame++) {
        must(throng_crowd_update(crowd, DT_S), "update");
    }
    const uint8_t rates[2] = {4, 1};
    must(throng_crowd_set_update_rate(crowd, handles, rates, 2), "set_update_rate");
    const uint8_t bad_rate = 3;
    must_fail(throng_crowd_set_update_rate(crowd, handles, &bad_rate, 1), THRONG_STATUS_INVALID_ARGUMENT, "an update rate of 3");
    size_t floats = 0;
    must(throng_crowd_floats_needed(crowd, archetype, THRONG_LAYOUT_MAT4, &floats), "floats_needed");
    size_t per_character = floats / 2;
    float *now = malloc(floats * sizeof(float));
    float *before = malloc(floats * sizeof(float));
    if (now == NULL || before == NULL) {
        check(0, "allocate the LOD matrices");
        free(now);
        free(before);
        throng_crowd_destroy(crowd);
        return;
    }
    int changed[2] = {0, 0};
    const int updates = 16;
    for (int frame = 0; frame <= updates; frame++) {
        must(throng_crowd_update(crowd, DT_S), "update");
        must(throng_crowd_evaluate(crowd, archetype, THRONG_LAYOUT_MAT4, now, floats, NULL, 0), "evaluate");
        if (frame > 0) {
            for (int i = 0; i < 2; i++) {
                size_t row = 0;
                uint32_t in_archetype = 0;
                must(throng_crowd_row_of(crowd, handles[i], &in_archetype, &row), "row_of");
                changed[i] += memcmp(now + row * per_character, before + row * per_character, per_character * sizeof(float)) != 0;
            }
        }
        float *swap = before;
        before = now;
        now = swap;
    }
    printf("LOD over %d updates: the rate-4 walker's matrices changed %d times, the rate-1 walker's %d\n", updates, changed[0],
           changed[1]);
    check(changed[0] == updates / 4 && changed[1] == updates, "a character at rate 4 is evaluated on one update in four");
    free(now);
    free(before);

    must(throng_crowd_set_trigger(crowd, jump, handles, 2, false), "set jump");
    must(throng_crowd_reset_trigger(crowd, jump, handles, 1), "reset_trigger");
    must(throng_crowd_update(crowd, DT_S), "update");
    const char *states[2];
    for (int i = 0; i < 2; i++) {
        must(throng_crowd_active_state_name(crowd, handles[i], 0, &states[i]), "active_state_name");
    }
    printf("jump set on both, reset on the first: %s, %s\n", states[0], states[1]);
    check(strcmp(states[0], "Jump") != 0 && strcmp(states[1], "Jump") == 0, "a reset trigger does not fire");
    throng_crowd_destroy(crowd);
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: %s GRAPH.json [CHARACTER.gltf] (the demo graph: src/demo/locomotion.json)\n", argv[0]);
        return 2;
    }
    size_t json_len = 0;
    char *json = read_file(argv[1], &json_len);
    if (json == NULL) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }

    /* A deliberate error first: malformed JSON comes back as a status and a message. */
    {
        ThrongCharacter *humanoid = NULL;
        ThrongCrowd *crowd = NULL;
        must(throng_character_humanoid(26, &humanoid), "throng_character_humanoid");
        must(throng_crowd_create(&crowd), "throng_crowd_create");
        const char *bad = "{ \"layers\": [ { \"name\": \"Base\", ";
        uint32_t archetype = 12345;
        ThrongStatus status = throng_crowd_add_archetype(crowd, humanoid, (const uint8_t *)bad, strlen(bad), &archetype);
        const char *message = throng_last_error_message();
        if (status == THRONG_STATUS_GRAPH && message[0] != '\0' && archetype == 12345) {
            printf("bad JSON rejected: %s: %s\n", throng_status_name(status), message);
        } else {
            fprintf(stderr, "FAIL: bad JSON gave %s (\"%s\")\n", throng_status_name(status), message);
            failures++;
        }
        must_fail(throng_character_humanoid(27, &humanoid), THRONG_STATUS_INVALID_ARGUMENT, "a 27-joint humanoid");
        must_fail(throng_crowd_create(NULL), THRONG_STATUS_NULL_POINTER, "throng_crowd_create(NULL)");
        must_fail(throng_character_from_gltf("no/such/file.gltf", 0, &humanoid), THRONG_STATUS_IMPORT, "a glTF file that is not there");
        throng_character_destroy(humanoid);
        throng_crowd_destroy(crowd);
    }

    /* The same crowd twice: one evaluated as mat4, one as affine 3x4. */
    Scene scene = make_scene(json, json_len);
    Scene affine = make_scene(json, json_len);
    check(throng_last_error_message()[0] == '\0', "a successful call leaves no error message");

    /* Handles carry their crowd: the other crowd refuses them and changes nothing. */
    {
        size_t before = 0, after = 0;
        must(throng_crowd_num_characters(affine.crowd, affine.archetype, &before), "num_characters");
        must_fail(throng_crowd_despawn(affine.crowd, scene.handles, 1), THRONG_STATUS_STALE_HANDLE, "despawn with another crowd's handle");
        must(throng_crowd_num_characters(affine.crowd, affine.archetype, &after), "num_characters");
        check(before == after && scene.handles[0] != affine.handles[0], "another crowd's handle removes nobody");
    }

    size_t floats = 0, floats_3x4 = 0;
    must(throng_crowd_floats_needed(scene.crowd, scene.archetype, THRONG_LAYOUT_MAT4, &floats), "floats_needed");
    must(throng_crowd_floats_needed(affine.crowd, affine.archetype, THRONG_LAYOUT_AFFINE_3X4, &floats_3x4), "floats_needed 3x4");
    const size_t joints = floats / NUM_CHARACTERS / 16;
    check(joints == 26 && floats_3x4 == NUM_CHARACTERS * joints * 12, "buffer sizes are characters x joints x 16 (or 12)");
    float *matrices = malloc(floats * sizeof(float));
    float *rows = malloc(floats_3x4 * sizeof(float));
    if (matrices == NULL || rows == NULL) {
        return 2;
    }
    ThrongRootDelta root[NUM_CHARACTERS];
    float travelled_m[NUM_CHARACTERS] = {0};
    const char *jumper_state = "";
    int layouts_agree = 1;

    for (int frame = 0; frame < FRAMES; frame++) {
        if (frame == JUMP_FRAME) {
            must(throng_crowd_set_trigger(scene.crowd, scene.jump, &scene.handles[3], 1, false), "jump");
            must(throng_crowd_set_trigger(affine.crowd, affine.jump, &affine.handles[3], 1, false), "jump");
        }
        must(throng_crowd_update(scene.crowd, DT_S), "update");
        must(throng_crowd_update(affine.crowd, DT_S), "update");
        must(throng_crowd_evaluate(scene.crowd, scene.archetype, THRONG_LAYOUT_MAT4, matrices, floats, root, NUM_CHARACTERS), "evaluate");
        must(throng_crowd_evaluate(affine.crowd, affine.archetype, THRONG_LAYOUT_AFFINE_3X4, rows, floats_3x4, NULL, 0), "evaluate 3x4");
        for (int i = 0; i < NUM_CHARACTERS; i++) {
            size_t row;
            uint32_t archetype;
            must(throng_crowd_row_of(scene.crowd, scene.handles[i], &archetype, &row), "row_of");
            travelled_m[i] += sqrtf(root[row].translation_m[0] * root[row].translation_m[0] + root[row].translation_m[2] * root[row].translation_m[2]);
        }
        /* Affine 3x4 holds the same matrices' top three rows, row by row. */
        for (size_t m = 0; m < NUM_CHARACTERS * joints; m++) {
            for (int r = 0; r < 3; r++) {
                for (int c = 0; c < 4; c++) {
                    if (rows[m * 12 + r * 4 + c] != matrices[m * 16 + c * 4 + r]) {
                        layouts_agree = 0;
                    }
                }
            }
        }
        if (frame == JUMP_FRAME + 20) {
            must(throng_crowd_active_state_name(scene.crowd, scene.handles[3], 0, &jumper_state), "active_state_name");
        }
    }

    /* The matrices: finite, rigid (the humanoid has no scale), and walking is not standing. */
    check(all_finite(matrices, floats), "every matrix is finite");
    int rigid = 1;
    for (size_t m = 0; m < NUM_CHARACTERS * joints; m++) {
        rigid &= is_rigid(&matrices[m * 16]);
    }
    check(rigid, "every skinning matrix is a rotation plus a translation");
    check(layouts_agree, "affine 3x4 output equals the mat4 output's top three rows");
    float difference = 0.0f;
    for (size_t k = 0; k < joints * 16; k++) {
        difference = fmaxf(difference, fabsf(matrices[joints * 16 + k] - matrices[k]));
    }
    check(difference > 0.05f, "the walker's matrices differ from the idle character's");

    /* Root motion: about speed x 2 s for the walker and the runner, none for the idle one. */
    printf("root travel over %d frames: idle %.3f m, walk %.3f m, run %.3f m\n", FRAMES, travelled_m[0], travelled_m[1], travelled_m[2]);
    check(travelled_m[0] < 0.01f, "the idle character stays put");
    check(travelled_m[1] > 2.4f && travelled_m[1] < 3.2f, "the walker covers about 1.5 m/s x 2 s");
    check(travelled_m[2] > 6.4f && travelled_m[2] < 8.4f, "the runner covers about 4 m/s x 2 s");

    /* States, by name. */
    const char *idle_state = "", *walker_state = "";
    must(throng_crowd_active_state_name(scene.crowd, scene.handles[0], 0, &idle_state), "active_state_name");
    must(throng_crowd_active_state_name(scene.crowd, scene.handles[1], 0, &walker_state), "active_state_name");
    printf("base layer: idle character in %s, walker in %s, jumper (20 frames after the trigger) in %s\n", idle_state, walker_state,
           jumper_state);
    check(strcmp(idle_state, "Idle") == 0 && strcmp(walker_state, "Move") == 0, "idle and walker are in Idle and Move");
    check(strcmp(jumper_state, "Jump") == 0, "the trigger made character 3 jump");
    ThrongLayerReadback readback;
    must(throng_crowd_readback(scene.crowd, scene.handles[1], 0, &readback), "readback");
    const char *by_index = "";
    must(throng_crowd_state_name(scene.crowd, scene.archetype, readback.active_state, &by_index), "state_name");
    check(strcmp(by_index, walker_state) == 0 && !readback.transitioning && readback.active_weight == 1.0f,
          "the walker's readback names Move, settled");

    /* Refusals: each a status and a message, nothing changed. */
    uint32_t missing;
    must_fail(throng_crowd_find_param(scene.crowd, scene.archetype, "no_such_parameter", &missing), THRONG_STATUS_UNKNOWN_NAME,
              "an unknown parameter name");
    const float one = 1.0f;
    must_fail(throng_crowd_set_float(scene.crowd, scene.jump, scene.handles, &one, 1), THRONG_STATUS_STATE, "a float for a trigger");
    const float nan_value = NAN;
    must_fail(throng_crowd_set_float(scene.crowd, scene.speed, scene.handles, &nan_value, 1), THRONG_STATUS_STATE, "a NaN speed");
    must_fail(throng_crowd_set_float(scene.crowd, scene.speed, scene.handles, NULL, 1), THRONG_STATUS_NULL_POINTER, "NULL values");
    must_fail(throng_crowd_update(scene.crowd, -1.0f), THRONG_STATUS_STATE, "a negative dt");
    must_fail(throng_crowd_update(NULL, DT_S), THRONG_STATUS_NULL_POINTER, "update(NULL)");
    must_fail(throng_crowd_evaluate(scene.crowd, scene.archetype, THRONG_LAYOUT_MAT4, matrices, floats - 1, NULL, 0),
              THRONG_STATUS_BUFFER_TOO_SMALL, "an output one float short");
    must_fail(throng_crowd_evaluate(scene.crowd, scene.archetype, 7, matrices, floats, NULL, 0), THRONG_STATUS_INVALID_ARGUMENT,
              "layout 7");
    must_fail(throng_crowd_spawn(scene.crowd, 9, 1, scene.handles), THRONG_STATUS_INVALID_ARGUMENT, "archetype 9");
    const uint64_t twice[2] = {scene.handles[0], scene.handles[0]};
    must_fail(throng_crowd_despawn(scene.crowd, twice, 2), THRONG_STATUS_INVALID_ARGUMENT, "one handle despawned twice at once");
    size_t count = 0;
    must(throng_crowd_num_characters(scene.crowd, scene.archetype, &count), "num_characters");
    check(count == NUM_CHARACTERS, "refused despawns removed nobody");

    /* Despawn the walker: its handle goes stale, the last character takes its row and the crowd
     * keeps evaluating. */
    must(throng_crowd_despawn(scene.crowd, &scene.handles[1], 1), "despawn");
    must_fail(throng_crowd_set_float(scene.crowd, scene.speed, &scene.handles[1], &one, 1), THRONG_STATUS_STALE_HANDLE,
              "a despawned handle");
    size_t row = 0;
    uint32_t archetype = 0;
    must(throng_crowd_row_of(scene.crowd, scene.handles[NUM_CHARACTERS - 1], &archetype, &row), "row_of");
    check(row == 1 && archetype == scene.archetype, "the last character moved into the freed row");
    uint64_t at_row_1 = 0;
    must(throng_crowd_handle_at(scene.crowd, scene.archetype, 1, &at_row_1), "handle_at");
    check(at_row_1 == scene.handles[NUM_CHARACTERS - 1], "handle_at names the character row_of placed there");
    must_fail(throng_crowd_handle_at(scene.crowd, scene.archetype, NUM_CHARACTERS - 1, &at_row_1), THRONG_STATUS_INVALID_ARGUMENT,
              "a row past the last");
    must(throng_crowd_floats_needed(scene.crowd, scene.archetype, THRONG_LAYOUT_MAT4, &floats), "floats_needed");
    check(floats == (NUM_CHARACTERS - 1) * joints * 16, "one character fewer to evaluate");
    must(throng_crowd_update_archetype(scene.crowd, scene.archetype, DT_S), "update_archetype");
    must(throng_crowd_evaluate(scene.crowd, scene.archetype, THRONG_LAYOUT_MAT4, matrices, floats, NULL, 0), "evaluate");
    check(all_finite(matrices, floats), "matrices after a despawn are finite");
    /* Readback of every row at once agrees with the one-character form. */
    ThrongLayerReadback rows_readback[NUM_CHARACTERS];
    must_fail(throng_crowd_readback_rows(scene.crowd, scene.archetype, 0, rows_readback, NUM_CHARACTERS - 2), THRONG_STATUS_BUFFER_TOO_SMALL,
              "a readback array one row short");
    must(throng_crowd_readback_rows(scene.crowd, scene.archetype, 0, rows_readback, NUM_CHARACTERS), "readback_rows");
    int rows_agree = 1;
    for (int i = 0; i < NUM_CHARACTERS; i++) {
        if (i == 1) {
            continue; /* despawned */
        }
        must(throng_crowd_row_of(scene.crowd, scene.handles[i], &archetype, &row), "row_of");
        must(throng_crowd_readback(scene.crowd, scene.handles[i], 0, &readback), "readback");
        rows_agree &= rows_readback[row].active_state == readback.active_state && rows_readback[row].phase == readback.phase;
    }
    check(rows_agree, "readback_rows[row] is each character's readback");

    throng_crowd_destroy(scene.crowd);
    throng_crowd_destroy(affine.crowd);
    int_and_bool_parameters();
    animation_events(json, json_len);
    update_rates_and_reset_trigger(json, json_len);
    if (argc == 3) {
        gltf_character(argv[2]);
    }
    free(matrices);
    free(rows);
    free(json);
    if (failures > 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("throng C example: all checks passed\n");
    return 0;
}
