import java.lang.instrument.Instrumentation;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.matcher.ElementMatchers;

/**
 * A Byte Buddy agent as APM agents build them: AgentBuilder with
 * retransformation, over java.lang.Thread (a bootstrap class) and the class
 * named by its argument, inlining an empty advice into Thread.getName and
 * every method of that class. Prints "byte buddy agent installed".
 */
public class ByteBuddyAgent {
    public static void premain(String target, Instrumentation inst) {
        new AgentBuilder.Default()
                .disableClassFormatChanges()
                .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
                .ignore(ElementMatchers.none())
                .type(ElementMatchers.named("java.lang.Thread").or(ElementMatchers.named(target)))
                .transform((builder, type, loader, module, domain) -> builder.visit(
                        Advice.to(Entered.class).on(ElementMatchers.named("getName")
                                .or(ElementMatchers.isDeclaredBy(ElementMatchers.named(target))
                                        .and(ElementMatchers.isMethod())))))
                .installOn(inst);
        System.out.println("byte buddy agent installed");
    }

    /** Empty: inlined where it applies, it changes the methods' code only. */
    public static class Entered {
        @Advice.OnMethodEnter
        static void enter() {}
    }
}
