import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;

/**
 * Prints `<name>=<value>` for the HotSpot flag named in args[0], as the JVM
 * reports it while the program runs (diagnostic flags need
 * -XX:+UnlockDiagnosticVMOptions to be reported).
 */
public class VmFlag {
    public static void main(String[] args) {
        HotSpotDiagnosticMXBean bean =
                ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
        System.out.println(args[0] + "=" + bean.getVMOption(args[0]).getValue());
    }
}
