/*
 * The java launcher's call of main(), handed to a thread with a larger
 * stack (see jvm/main_stack.rs for why and how).
 *
 * The launcher calls main() through the JNI functions CallStaticVoidMethod
 * (static main) and CallVoidMethod (JDK 21 on: an instance main), which
 * take their arguments as C varargs. Stable Rust can neither receive nor
 * pass on varargs, so the two replacements installed in the JNI function
 * table are written here: each asks the Rust side whether this call is the
 * one to take; if not, it passes its va_list on to the JVM's own
 * CallStaticVoidMethodV or CallVoidMethodV, unchanged; if so, it reads
 * main()'s argument (its one object, or none) and hands the call over.
 */
#include <stdarg.h>
#include <stddef.h>

typedef void (*call_void_v)(void *env, void *target, void *method, va_list args);
/* -1: not the call to take; else how many object arguments main() takes (0 or 1). */
typedef int (*main_arguments_fn)(void *env, void *method);
typedef void (*run_main_fn)(void *env, void *target, void *method, int arguments, void *argument,
                            int is_static);

static call_void_v jvm_call_static_void_v;
static call_void_v jvm_call_void_v;
static main_arguments_fn main_arguments;
static run_main_fn run_main;

/* Called once, before the replacements are installed in the table. */
void hprof_main_call_install(call_void_v static_void_v, call_void_v void_v,
                             main_arguments_fn arguments, run_main_fn run)
{
    jvm_call_static_void_v = static_void_v;
    jvm_call_void_v = void_v;
    main_arguments = arguments;
    run_main = run;
}

static void call(void *env, void *target, void *method, va_list args, int is_static)
{
    int arguments = main_arguments(env, method);
    if (arguments < 0) {
        (is_static ? jvm_call_static_void_v : jvm_call_void_v)(env, target, method, args);
        return;
    }
    void *argument = arguments > 0 ? va_arg(args, void *) : NULL;
    run_main(env, target, method, arguments, argument, is_static);
}

/* The replacement of CallStaticVoidMethod(JNIEnv*, jclass, jmethodID, ...). */
void hprof_main_call_static_void(void *env, void *cls, void *method, ...)
{
    va_list args;
    va_start(args, method);
    call(env, cls, method, args, 1);
    va_end(args);
}

/* The replacement of CallVoidMethod(JNIEnv*, jobject, jmethodID, ...). */
void hprof_main_call_void(void *env, void *object, void *method, ...)
{
    va_list args;
    va_start(args, method);
    call(env, object, method, args, 0);
    va_end(args);
}
