import java.lang.reflect.Field;
import java.lang.reflect.Modifier;

/**
 * What reflection shows of java.lang.Thread: its public fields, its declared
 * fields, and the agent's calling-context field if there is one (public?
 * synthetic? can user code write it?). Then a few allocations at a known
 * site, so that a profile shows the agent counted.
 */
public class ThreadFields {
    static Object kept;

    public static void main(String[] args) throws Exception {
        System.out.println("public_fields=" + Thread.class.getFields().length);
        System.out.println("declared_fields=" + Thread.class.getDeclaredFields().length);
        int agentFields = 0;
        for (Field field : Thread.class.getDeclaredFields()) {
            if (!field.getName().startsWith("hprof_rs")) {
                continue;
            }
            agentFields++;
            System.out.println("agent_field_public=" + Modifier.isPublic(field.getModifiers()));
            System.out.println("agent_field_synthetic=" + field.isSynthetic());
            boolean written;
            try {
                field.setLong(Thread.currentThread(), 1L);
                written = true;
            } catch (IllegalAccessException refused) {
                written = false;
            }
            System.out.println("agent_field_writable=" + written);
        }
        System.out.println("agent_fields=" + agentFields);
        for (int i = 0; i < 1000; i++) {
            kept = make();
        }
    }

    static int[] make() {
        return new int[4];
    }
}
