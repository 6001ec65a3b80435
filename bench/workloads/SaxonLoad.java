import java.io.StringReader;
import java.io.StringWriter;
import java.util.Random;
import java.util.zip.CRC32;
import javax.xml.transform.Templates;
import javax.xml.transform.Transformer;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.stream.StreamResult;
import javax.xml.transform.stream.StreamSource;

/**
 * Workload "saxon": Saxon-HE (Debian package libsaxonhe-java) compiles an XSLT 2.0 stylesheet
 * and runs it ROUNDS times over a generated order book of ORDERS orders: grouping by
 * customer and by product, sorting, sums, string functions and number formatting, into an
 * HTML report. Chosen for the bench without being measured first. The input comes from a
 * fixed seed, so the CRC-32 of the reports, printed as the checksum, is the same every run.
 *
 * Usage: SaxonLoad [ORDERS [ROUNDS]]
 */
public final class SaxonLoad {
    static final String STYLESHEET = String.join("\n",
            "<xsl:stylesheet version=\"2.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\"",
            "    xmlns:xs=\"http://www.w3.org/2001/XMLSchema\">",
            "  <xsl:output method=\"html\" indent=\"yes\"/>",
            "  <xsl:template match=\"/orders\">",
            "    <html><body>",
            "      <h1>Customers</h1>",
            "      <xsl:for-each-group select=\"order\" group-by=\"@customer\">",
            "        <xsl:sort select=\"sum(current-group()/line/(@qty * @price))\" data-type=\"number\" order=\"descending\"/>",
            "        <div class=\"customer\">",
            "          <h2><xsl:value-of select=\"upper-case(current-grouping-key())\"/></h2>",
            "          <p><xsl:value-of select=\"format-number(sum(current-group()/line/(@qty * @price)), '#,##0.00')\"/></p>",
            "          <ul><xsl:for-each select=\"current-group()\">",
            "            <xsl:sort select=\"@date\"/>",
            "            <li><xsl:value-of select=\"concat(@id, ' ', @date, ' ', string-join(line/@product, ', '))\"/></li>",
            "          </xsl:for-each></ul>",
            "        </div>",
            "      </xsl:for-each-group>",
            "      <h1>Products</h1>",
            "      <table><xsl:for-each-group select=\"order/line\" group-by=\"@product\">",
            "        <xsl:sort select=\"current-grouping-key()\"/>",
            "        <tr><td><xsl:value-of select=\"translate(current-grouping-key(), 'aeiou', 'AEIOU')\"/></td>",
            "          <td><xsl:value-of select=\"sum(current-group()/@qty)\"/></td>",
            "          <td><xsl:value-of select=\"format-number(avg(current-group()/@price), '0.000')\"/></td>",
            "          <td><xsl:value-of select=\"count(distinct-values(current-group()/../@customer))\"/></td></tr>",
            "      </xsl:for-each-group></table>",
            "      <h1>Words</h1>",
            "      <p><xsl:value-of select=\"count(tokenize(string-join(order/note, ' '), '\\s+')[string-length(.) gt 5])\"/></p>",
            "    </body></html>",
            "  </xsl:template>",
            "</xsl:stylesheet>");

    private static final String[] SYLLABLES = {"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po"};

    private static String name(Random random, int syllables) {
        StringBuilder name = new StringBuilder();
        for (int i = 0; i < syllables; i++) {
            name.append(SYLLABLES[random.nextInt(SYLLABLES.length)]);
        }
        return name.toString();
    }

    static String orders(int count) {
        Random random = new Random(7);
        String[] customers = new String[400];
        for (int i = 0; i < customers.length; i++) {
            customers[i] = name(random, 3) + i;
        }
        String[] products = new String[150];
        for (int i = 0; i < products.length; i++) {
            products[i] = name(random, 2) + "-" + i;
        }
        StringBuilder xml = new StringBuilder("<orders>");
        for (int o = 0; o < count; o++) {
            xml.append("<order id=\"o").append(o).append("\" customer=\"")
                    .append(customers[random.nextInt(customers.length)]).append("\" date=\"2026-")
                    .append(String.format("%02d-%02d", 1 + random.nextInt(12), 1 + random.nextInt(28)))
                    .append("\">");
            int lines = 1 + random.nextInt(5);
            for (int l = 0; l < lines; l++) {
                xml.append("<line product=\"").append(products[random.nextInt(products.length)])
                        .append("\" qty=\"").append(1 + random.nextInt(20)).append("\" price=\"")
                        .append(random.nextInt(10_000) / 100.0).append("\"/>");
            }
            xml.append("<note>");
            for (int w = 0; w < 8; w++) {
                xml.append(name(random, 1 + random.nextInt(4))).append(' ');
            }
            xml.append("</note></order>");
        }
        return xml.append("</orders>").toString();
    }

    public static void main(String[] args) throws Exception {
        int count = args.length > 0 ? Integer.parseInt(args[0]) : 30_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        String input = orders(count);
        TransformerFactory factory = new net.sf.saxon.TransformerFactoryImpl();
        CRC32 crc = new CRC32();
        for (int round = 0; round < rounds; round++) {
            Templates templates = factory.newTemplates(new StreamSource(new StringReader(STYLESHEET)));
            Transformer transformer = templates.newTransformer();
            StringWriter report = new StringWriter();
            transformer.transform(new StreamSource(new StringReader(input)), new StreamResult(report));
            crc.update(report.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        System.out.println("checksum=" + Long.toHexString(crc.getValue()));
    }
}
