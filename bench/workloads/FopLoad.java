import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.StringReader;
import java.util.Date;
import java.util.Random;
import javax.xml.transform.Transformer;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.sax.SAXResult;
import javax.xml.transform.stream.StreamSource;
import org.apache.fop.apps.FOUserAgent;
import org.apache.fop.apps.Fop;
import org.apache.fop.apps.FopFactory;
import org.apache.fop.apps.MimeConstants;

/**
 * Workload "fop": Apache FOP (Debian package fop) lays out a generated XSL-FO document of
 * SECTIONS sections (headings, justified paragraphs, a table and a list each) and renders it
 * to PDF in memory, ROUNDS times. Chosen for the bench without being measured first. The
 * document comes from a fixed seed and the creation date is fixed, so the page count printed
 * as the checksum is the same in every run.
 *
 * Usage: FopLoad [SECTIONS [ROUNDS]]
 */
public final class FopLoad {
    private static final String[] WORDS = {
        "allocation", "site", "profile", "thread", "monitor", "sample", "heap", "trace",
        "frame", "method", "class", "object", "array", "buffer", "stream", "reader", "writer",
        "layout", "page", "table", "cell", "list", "block", "inline", "font", "glyph", "a",
        "the", "of", "and", "in", "to", "is", "for", "on", "with", "by", "at", "from", "as",
    };

    public static void main(String[] args) throws Exception {
        int sections = args.length > 0 ? Integer.parseInt(args[0]) : 60;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        String document = document(sections);
        FopFactory factory = FopFactory.newInstance(new File(".").toURI());
        TransformerFactory transformers = TransformerFactory.newInstance();
        long pages = 0;
        for (int round = 0; round < rounds; round++) {
            FOUserAgent agent = factory.newFOUserAgent();
            agent.setCreationDate(new Date(0));
            ByteArrayOutputStream pdf = new ByteArrayOutputStream();
            Fop fop = factory.newFop(MimeConstants.MIME_PDF, agent, pdf);
            Transformer identity = transformers.newTransformer();
            identity.transform(new StreamSource(new StringReader(document)),
                    new SAXResult(fop.getDefaultHandler()));
            pages += fop.getResults().getPageCount();
        }
        System.out.println("checksum=" + pages);
    }

    private static String sentence(Random random, int words) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < words; i++) {
            String word = WORDS[random.nextInt(WORDS.length)];
            text.append(i == 0 ? Character.toUpperCase(word.charAt(0)) + word.substring(1) : word);
            text.append(i + 1 == words ? ". " : " ");
        }
        return text.toString();
    }

    static String document(int sections) {
        Random random = new Random(42);
        StringBuilder fo = new StringBuilder();
        fo.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
                .append("<fo:root xmlns:fo=\"http://www.w3.org/1999/XSL/Format\">")
                .append("<fo:layout-master-set><fo:simple-page-master master-name=\"A4\"")
                .append(" page-height=\"29.7cm\" page-width=\"21cm\" margin=\"2cm\">")
                .append("<fo:region-body margin-bottom=\"1.5cm\"/><fo:region-after extent=\"1cm\"/>")
                .append("</fo:simple-page-master></fo:layout-master-set>")
                .append("<fo:page-sequence master-reference=\"A4\">")
                .append("<fo:static-content flow-name=\"xsl-region-after\"><fo:block text-align=\"center\"")
                .append(" font-size=\"9pt\">Page <fo:page-number/></fo:block></fo:static-content>")
                .append("<fo:flow flow-name=\"xsl-region-body\" font-family=\"serif\" font-size=\"10pt\">");
        for (int s = 1; s <= sections; s++) {
            fo.append("<fo:block font-size=\"14pt\" font-weight=\"bold\" space-before=\"12pt\"")
                    .append(" keep-with-next=\"always\" id=\"s").append(s).append("\">Section ")
                    .append(s).append(": ").append(sentence(random, 4)).append("</fo:block>");
            for (int p = 0; p < 4; p++) {
                fo.append("<fo:block text-align=\"justify\" space-before=\"6pt\" hyphenate=\"false\">")
                        .append(sentence(random, 40 + random.nextInt(40))).append("</fo:block>");
            }
            fo.append("<fo:table table-layout=\"fixed\" width=\"100%\" space-before=\"6pt\">")
                    .append("<fo:table-column column-width=\"25%\" number-columns-repeated=\"4\"/>")
                    .append("<fo:table-body>");
            for (int row = 0; row < 12; row++) {
                fo.append("<fo:table-row>");
                for (int cell = 0; cell < 4; cell++) {
                    fo.append("<fo:table-cell border=\"0.5pt solid black\" padding=\"2pt\"><fo:block>")
                            .append(cell == 0 ? sentence(random, 2) : Integer.toString(random.nextInt(100_000)))
                            .append("</fo:block></fo:table-cell>");
                }
                fo.append("</fo:table-row>");
            }
            fo.append("</fo:table-body></fo:table><fo:list-block space-before=\"6pt\">");
            for (int item = 0; item < 6; item++) {
                fo.append("<fo:list-item><fo:list-item-label end-indent=\"label-end()\"><fo:block>")
                        .append(item + 1).append(".</fo:block></fo:list-item-label>")
                        .append("<fo:list-item-body start-indent=\"body-start()\"><fo:block>")
                        .append(sentence(random, 12)).append("</fo:block></fo:list-item-body></fo:list-item>");
            }
            fo.append("</fo:list-block>");
        }
        fo.append("</fo:flow></fo:page-sequence></fo:root>");
        return fo.toString();
    }
}
